import CAVCodec
import FieldcapCore

/// How a camera's raw frame maps onto the planes FFV1 codes, losslessly both ways: YUYV's
/// samples as 4:2:2 planes, NV12's interleaved chroma as two 4:2:0 planes, GREY as one 8-bit
/// plane, a Bayer mosaic as one 8-bit plane as it is (colours interleaved: lossless, though less
/// compact than planes of one colour would be, and any FFV1 decoder gives the mosaic back as grey),
/// Y16 and Z16 as one 16-bit little-endian plane. No sample changes: unpacking a decoded
/// frame gives the captured bytes back exactly.
struct FFV1Planes {
    let format: VideoFormat
    /// libavcodec's name for the planes.
    let pixelFormat: AVPixelFormat

    /// Why `format`'s frames cannot go to FFV1, or nil.
    static func problem(with format: VideoFormat) -> String? {
        switch format.pixelFormat {
        case .yuyv, .nv12, .grey, .y16, .z16, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: break
        case .mjpeg, .ffv1, .h264, .hevc, .fwht:
            return
                "encode=ffv1 takes raw frames (YUYV, NV12, GREY, Bayer, Y16, "
                + "Z16); \(format.pixelFormat.rawValue) is compressed already"
        }
        guard format.width > 0, format.height > 0 else { return "\(format): no pixels" }
        if format.pixelFormat == .yuyv || format.pixelFormat == .nv12, format.width % 2 != 0 {
            return "\(format): an odd width has no \(format.pixelFormat.rawValue) chroma"
        }
        if format.pixelFormat == .nv12, format.height % 2 != 0 { return "\(format): an odd height has no NV12 chroma" }
        return nil
    }

    /// nil for a format `problem(with:)` refuses.
    init?(format: VideoFormat) {
        guard Self.problem(with: format) == nil else { return nil }
        self.format = format
        pixelFormat =
            switch format.pixelFormat {
            case .yuyv: AV_PIX_FMT_YUV422P
            case .nv12: AV_PIX_FMT_YUV420P
            case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: AV_PIX_FMT_GRAY8
            default: AV_PIX_FMT_GRAY16LE
            }
    }

    /// Bytes of one captured frame.
    var frameBytes: Int { format.pixelFormat.frameBytes(width: format.width, height: format.height) ?? 0 }

    /// Splits `frame` (at least `frameBytes`) into `planes`' buffers, each row at its stride.
    func pack(_ frame: UnsafeRawBufferPointer, into planes: UnsafePointer<AVFrame>) {
        let width = format.width, height = format.height
        let source = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let (y, yStride) = Self.plane(0, of: planes)
        switch format.pixelFormat {
        case .yuyv:
            let ((u, uStride), (v, vStride)) = (Self.plane(1, of: planes), Self.plane(2, of: planes))
            for row in 0..<height {
                let packed = source + row * width * 2
                let (yRow, uRow, vRow) = (y + row * yStride, u + row * uStride, v + row * vStride)
                // Y0 U Y1 V: every even byte is luma, the odd ones alternate U and V.
                for pair in 0..<(width / 2) {
                    let quad = packed + pair * 4
                    yRow[pair * 2] = quad[0]
                    uRow[pair] = quad[1]
                    yRow[pair * 2 + 1] = quad[2]
                    vRow[pair] = quad[3]
                }
            }
        case .nv12:
            copyRows(from: source, rowBytes: width, rows: height, to: y, stride: yStride)
            let ((u, uStride), (v, vStride)) = (Self.plane(1, of: planes), Self.plane(2, of: planes))
            let interleaved = source + width * height
            for row in 0..<(height / 2) {
                let pairs = interleaved + row * width
                let (uRow, vRow) = (u + row * uStride, v + row * vStride)
                for column in 0..<(width / 2) {
                    uRow[column] = pairs[column * 2]
                    vRow[column] = pairs[column * 2 + 1]
                }
            }
        case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            copyRows(from: source, rowBytes: width, rows: height, to: y, stride: yStride)
        default: copyRows(from: source, rowBytes: width * 2, rows: height, to: y, stride: yStride)
        }
    }

    /// Joins a decoded frame's planes back into the captured layout, `frameBytes` into `frame`.
    func unpack(_ planes: UnsafePointer<AVFrame>, into frame: UnsafeMutableRawBufferPointer) {
        let width = format.width, height = format.height
        let target = frame.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let (y, yStride) = Self.plane(0, of: planes)
        switch format.pixelFormat {
        case .yuyv:
            let ((u, uStride), (v, vStride)) = (Self.plane(1, of: planes), Self.plane(2, of: planes))
            for row in 0..<height {
                let packed = target + row * width * 2
                let (yRow, uRow, vRow) = (y + row * yStride, u + row * uStride, v + row * vStride)
                for pair in 0..<(width / 2) {
                    let quad = packed + pair * 4
                    quad[0] = yRow[pair * 2]
                    quad[1] = uRow[pair]
                    quad[2] = yRow[pair * 2 + 1]
                    quad[3] = vRow[pair]
                }
            }
        case .nv12:
            copyRows(from: y, stride: yStride, rowBytes: width, rows: height, to: target)
            let ((u, uStride), (v, vStride)) = (Self.plane(1, of: planes), Self.plane(2, of: planes))
            let interleaved = target + width * height
            for row in 0..<(height / 2) {
                let pairs = interleaved + row * width
                let (uRow, vRow) = (u + row * uStride, v + row * vStride)
                for column in 0..<(width / 2) {
                    pairs[column * 2] = uRow[column]
                    pairs[column * 2 + 1] = vRow[column]
                }
            }
        case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            copyRows(from: y, stride: yStride, rowBytes: width, rows: height, to: target)
        default: copyRows(from: y, stride: yStride, rowBytes: width * 2, rows: height, to: target)
        }
    }

    /// A plane's first byte and its stride (bytes from one row to the next, padding included).
    private static func plane(_ index: Int32, of frame: UnsafePointer<AVFrame>) -> (UnsafeMutablePointer<UInt8>, Int) {
        (CAVCodec_frame_plane(frame, index)!, Int(CAVCodec_frame_stride(frame, index)))
    }

    private func copyRows(
        from source: UnsafePointer<UInt8>, rowBytes: Int, rows: Int, to target: UnsafeMutablePointer<UInt8>, stride: Int
    ) {
        for row in 0..<rows { (target + row * stride).update(from: source + row * rowBytes, count: rowBytes) }
    }

    private func copyRows(
        from source: UnsafeMutablePointer<UInt8>, stride: Int, rowBytes: Int, rows: Int,
        to target: UnsafeMutablePointer<UInt8>
    ) {
        for row in 0..<rows { (target + row * rowBytes).update(from: source + row * stride, count: rowBytes) }
    }
}
