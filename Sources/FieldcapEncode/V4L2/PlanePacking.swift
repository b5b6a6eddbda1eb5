import FieldcapCore

/// Copies a camera's frame (its lines packed, as fieldcap's buffers hold them) into a V4L2
/// encoder's OUTPUT buffer, whose lines may be longer (`bytesperline`, the driver's alignment):
/// one copy of the whole frame when the layouts agree, a copy a line otherwise.
struct PlanePacking {
    /// Per plane: its lines and the bytes of each line in the camera's frame.
    let planes: [(lines: Int, lineBytes: Int)]
    let bytesPerLine: Int
    /// The bytes the encoder reads of a buffer (its `sizeimage`).
    let sizeImage: Int

    /// Nil when the encoder's layout cannot hold the frame (lines shorter than the camera's, or a
    /// buffer too small): a driver fieldcap would misfeed.
    init?(_ format: VideoFormat, bytesPerLine: Int, sizeImage: Int) {
        let width = format.width, height = format.height
        switch format.pixelFormat {
        case .yuyv, .y16, .z16: planes = [(height, width * 2)]
        case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: planes = [(height, width)]
        // NV12's interleaved chroma lines are as long as its luma lines, at the same stride.
        case .nv12: planes = [(height, width), (height / 2, width)]
        case .mjpeg, .ffv1, .h264, .hevc, .fwht: return nil
        }
        guard bytesPerLine >= planes[0].lineBytes,
            sizeImage >= planes.reduce(0, { $0 + $1.lines }) * bytesPerLine - (bytesPerLine - planes[0].lineBytes)
        else { return nil }
        self.bytesPerLine = bytesPerLine
        self.sizeImage = sizeImage
    }

    /// The encoder reads the frame's bytes as they are (its lines as long as the frame's): a
    /// camera's buffer can be read in place.
    var isContiguous: Bool { bytesPerLine == planes[0].lineBytes }

    func pack(_ frame: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawPointer) {
        guard let source = frame.baseAddress else { return }
        if bytesPerLine == planes[0].lineBytes {
            buffer.copyMemory(from: source, byteCount: min(frame.count, sizeImage))
            return
        }
        var from = source
        var to = buffer
        for plane in planes {
            for _ in 0..<plane.lines {
                to.copyMemory(from: from, byteCount: plane.lineBytes)
                from += plane.lineBytes
                to += bytesPerLine
            }
        }
    }
}
