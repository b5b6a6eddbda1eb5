import FieldcapCore

/// Copies a camera's frame (its lines packed, as fieldcap's buffers hold them) into a V4L2
/// encoder's OUTPUT buffer, which may be laid out larger: longer lines (`bytesperline`, the
/// driver's alignment) and a taller, wider picture (`coded`: a 1080p H.264 encoder's 1088 lines,
/// vicodec's 640x360 at the least). One copy of the whole frame when the layouts agree; a copy a
/// line otherwise, and the picture's edge repeated into the padding, so the encoder codes a
/// continuation of the picture rather than a hard border (the encoder is told to show only the
/// camera's size: `V4L2CodecDevice.setVisibleSize`).
struct PlanePacking {
    /// One plane: its lines and bytes a line in the camera's frame, its lines in the encoder's
    /// picture, and what repeats into the padding: the bytes of the last pixels on the right, the
    /// last lines below (two for a Bayer mosaic, whose rows alternate colours).
    struct Plane {
        var lines: Int
        var lineBytes: Int
        var codedLines: Int
        var pixelBytes: Int
        var linePeriod = 1
    }

    let planes: [Plane]
    let bytesPerLine: Int
    /// The bytes of a line the encoder reads as picture (its coded width).
    let codedLineBytes: Int
    /// The bytes the encoder reads of a buffer (its `sizeimage`).
    let sizeImage: Int

    /// Nil when the encoder's layout cannot hold the frame (lines shorter than the camera's, a
    /// smaller picture, or a buffer too small): a driver fieldcap would misfeed.
    init?(_ format: VideoFormat, bytesPerLine: Int, sizeImage: Int, codedWidth: Int? = nil, codedHeight: Int? = nil) {
        let width = format.width, height = format.height
        let (codedWidth, codedHeight) = (codedWidth ?? width, codedHeight ?? height)
        guard codedWidth >= width, codedHeight >= height else { return nil }
        switch format.pixelFormat {
        // YUYV's pixels come in pairs sharing their chroma: the last pair is what repeats.
        case .yuyv: planes = [Plane(lines: height, lineBytes: width * 2, codedLines: codedHeight, pixelBytes: 4)]
        case .y16, .z16: planes = [Plane(lines: height, lineBytes: width * 2, codedLines: codedHeight, pixelBytes: 2)]
        case .grey: planes = [Plane(lines: height, lineBytes: width, codedLines: codedHeight, pixelBytes: 1)]
        // A Bayer mosaic repeats its last two columns and rows, its pattern's period.
        case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            planes = [Plane(lines: height, lineBytes: width, codedLines: codedHeight, pixelBytes: 2, linePeriod: 2)]
        // NV12's interleaved chroma lines are as long as its luma lines, at the same stride, and
        // start after the coded picture's luma.
        case .nv12:
            planes = [
                Plane(lines: height, lineBytes: width, codedLines: codedHeight, pixelBytes: 1),
                Plane(lines: height / 2, lineBytes: width, codedLines: codedHeight / 2, pixelBytes: 2),
            ]
        case .mjpeg, .ffv1, .h264, .hevc, .fwht: return nil
        }
        let codedLineBytes = planes[0].lineBytes / width * codedWidth
        guard bytesPerLine >= codedLineBytes,
            sizeImage >= planes.reduce(0, { $0 + $1.codedLines }) * bytesPerLine - (bytesPerLine - codedLineBytes)
        else { return nil }
        self.bytesPerLine = bytesPerLine
        self.codedLineBytes = codedLineBytes
        self.sizeImage = sizeImage
    }

    /// The encoder reads the frame's bytes as they are (its lines and picture the frame's): a
    /// camera's buffer can be read in place.
    var isContiguous: Bool {
        bytesPerLine == planes[0].lineBytes && planes.allSatisfy { $0.codedLines == $0.lines }
    }

    func pack(_ frame: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawPointer) {
        guard let source = frame.baseAddress else { return }
        if isContiguous {
            buffer.copyMemory(from: source, byteCount: min(frame.count, sizeImage))
            return
        }
        var from = source
        var to = buffer
        for plane in planes {
            let planeStart = to
            for _ in 0..<plane.lines {
                to.copyMemory(from: from, byteCount: plane.lineBytes)
                // The padding on the right: the line's last pixel, again and again.
                var filled = plane.lineBytes
                while filled + plane.pixelBytes <= codedLineBytes {
                    (to + filled).copyMemory(from: to + plane.lineBytes - plane.pixelBytes, byteCount: plane.pixelBytes)
                    filled += plane.pixelBytes
                }
                from += plane.lineBytes
                to += bytesPerLine
            }
            // The padding below: the last lines again.
            for line in plane.lines..<plane.codedLines {
                let repeated = plane.lines - plane.linePeriod + (line - plane.lines) % plane.linePeriod
                to.copyMemory(from: planeStart + max(0, repeated) * bytesPerLine, byteCount: codedLineBytes)
                to += bytesPerLine
            }
        }
    }
}
