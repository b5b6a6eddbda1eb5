import CTurboJPEG
import FieldcapCore
import FieldcapEncode

/// A camera frame as the 4:2:0 planes H.264 players take (`H264Encoder.Planes`): luma as the
/// camera gave it, chroma from its own samples with no colour conversion (YUYV's and a 4:2:2
/// JPEG's two rows averaged into one, NV12's split, a 4:4:4 JPEG's 2x2 blocks averaged), GREY and
/// 16-bit (its high byte) with neutral chroma, a Bayer mosaic demosaiced (`YUVPlanes`), MJPEG
/// through libjpeg-turbo's decoder to its own planes.
///
/// Thread-bound: it owns libjpeg-turbo's handle and plane buffers.
final class I420Picture {
    let format: VideoFormat
    private let planes: YUVPlanes?
    private let decoder: tjhandle?
    /// A JPEG's decoded planes, grown to the largest frame seen.
    private var jpegPlanes: [[UInt8]] = [[], [], []]

    /// Why `format` cannot become 4:2:0 planes, or nil.
    static func problem(with format: VideoFormat) -> String? {
        if let problem = H264Encoder.problem(width: format.width, height: format.height) { return problem }
        switch format.pixelFormat {
        case .mjpeg, .y16, .z16: return nil
        case .ffv1, .h264, .hevc, .fwht:
            return "\(format.pixelFormat.rawValue) frames are not pictures (decode them first)"
        default: return YUVPlanes.problem(with: format)
        }
    }

    init(format: VideoFormat) throws(ExportError) {
        if let problem = Self.problem(with: format) { throw ExportError(.session, "\(format): \(problem)") }
        self.format = format
        switch format.pixelFormat {
        case .mjpeg:
            planes = nil
            guard let decoder = tjInitDecompress() else {
                throw ExportError(.output, "libjpeg-turbo could not start a decoder")
            }
            self.decoder = decoder
        case .y16, .z16, .grey:
            planes = nil
            decoder = nil
        default:
            planes = YUVPlanes(format: format)
            decoder = nil
        }
    }

    deinit { if let decoder { tjDestroy(decoder) } }

    /// Writes `frame` into `out`.
    func fill(_ out: H264Encoder.Planes, from frame: [UInt8]) throws(ExportError) {
        let width = format.width, height = format.height
        if format.pixelFormat == .mjpeg { return try fillJPEG(out, from: frame) }
        let needed = format.pixelFormat.frameBytes(width: width, height: height) ?? 0
        guard frame.count >= needed else {
            throw ExportError(.session, "a \(format) frame of \(frame.count) bytes is short of \(needed)")
        }
        frame.withUnsafeBufferPointer { source in
            let bytes = source.baseAddress!
            switch format.pixelFormat {
            case .grey:
                Self.copy(bytes, stride: width, to: out.y, stride: out.yStride, width: width, height: height)
                Self.neutralChroma(out, width: width, height: height)
            case .y16, .z16:
                // Little-endian: the high byte of each sample is the odd one.
                for row in 0..<height {
                    let line = bytes + row * width * 2, target = out.y + row * out.yStride
                    for column in 0..<width { target[column] = line[column * 2 + 1] }
                }
                Self.neutralChroma(out, width: width, height: height)
            default:
                guard let planes, let split = planes.split(UnsafeRawBufferPointer(source)) else { return }
                let strides = split.strides.map(Int.init)
                Self.copy(
                    split.planes[0]!, stride: strides[0], to: out.y, stride: out.yStride, width: width, height: height)
                let chromaRows = planes.subsampling == TJSAMP_422 ? height : height / 2
                Self.chroma420(
                    split.planes[1]!, stride: strides[1], rows: chromaRows, columns: width / 2, into: out.u,
                    stride: out.uStride, height: height)
                Self.chroma420(
                    split.planes[2]!, stride: strides[2], rows: chromaRows, columns: width / 2, into: out.v,
                    stride: out.vStride, height: height)
            }
        }
    }

    private func fillJPEG(_ out: H264Encoder.Planes, from frame: [UInt8]) throws(ExportError) {
        guard let decoder else { throw ExportError(.output, "no JPEG decoder") }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colourspace: Int32 = 0
        let header = frame.withUnsafeBufferPointer {
            tjDecompressHeader3(decoder, $0.baseAddress, UInt(frame.count), &width, &height, &subsampling, &colourspace)
        }
        guard header == 0 else {
            throw ExportError(.session, "an MJPEG frame does not decode: \(String(cString: tjGetErrorStr2(decoder)))")
        }
        guard Int(width) == format.width, Int(height) == format.height else {
            throw ExportError(
                .session, "an MJPEG frame of \(width)x\(height) in a \(format.width)x\(format.height) video")
        }
        let sampling = TJSAMP(rawValue: UInt32(subsampling))
        guard [TJSAMP_420, TJSAMP_422, TJSAMP_444, TJSAMP_GRAY].contains(sampling) else {
            throw ExportError(
                .session, "an MJPEG frame with chroma subsampling \(subsampling), not 4:2:0, 4:2:2, 4:4:4 or grey")
        }
        let components = sampling == TJSAMP_GRAY ? 1 : 3
        var strides = [Int32](repeating: 0, count: 3)
        for component in 0..<components {
            let planeWidth = tjPlaneWidth(Int32(component), width, subsampling)
            let planeHeight = tjPlaneHeight(Int32(component), height, subsampling)
            strides[component] = planeWidth
            let size = Int(planeWidth) * Int(planeHeight)
            if jpegPlanes[component].count < size { jpegPlanes[component] = [UInt8](repeating: 0, count: size) }
        }
        // Taken out while libjpeg-turbo writes them: three overlapping accesses to one array
        // property would break Swift's exclusivity.
        var (y, u, v) = (jpegPlanes[0], jpegPlanes[1], jpegPlanes[2])
        jpegPlanes = [[], [], []]
        let decoded = y.withUnsafeMutableBufferPointer { y in
            u.withUnsafeMutableBufferPointer { u in
                v.withUnsafeMutableBufferPointer { v in
                    var targets: [UnsafeMutablePointer<UInt8>?] = [y.baseAddress, u.baseAddress, v.baseAddress]
                    return frame.withUnsafeBufferPointer { source in
                        tjDecompressToYUVPlanes(
                            decoder, source.baseAddress, UInt(frame.count), &targets, width, &strides, height, 0)
                    }
                }
            }
        }
        jpegPlanes = [y, u, v]
        // A warning ("Corrupt JPEG data", which USB cameras' frames often draw) still decodes
        // the picture: one damaged frame must not cost the whole video.
        guard decoded == 0 || tjGetErrorCode(decoder) == Int32(TJERR_WARNING.rawValue) else {
            throw ExportError(.session, "an MJPEG frame does not decode: \(String(cString: tjGetErrorStr2(decoder)))")
        }
        let w = format.width, h = format.height
        jpegPlanes[0].withUnsafeBufferPointer {
            Self.copy($0.baseAddress!, stride: Int(strides[0]), to: out.y, stride: out.yStride, width: w, height: h)
        }
        if sampling == TJSAMP_GRAY { return Self.neutralChroma(out, width: w, height: h) }
        for (component, target, stride) in [(1, out.u, out.uStride), (2, out.v, out.vStride)] {
            jpegPlanes[component].withUnsafeBufferPointer { plane in
                let source = plane.baseAddress!, sourceStride = Int(strides[component])
                if sampling == TJSAMP_444 {
                    // Each 2x2 block's four samples averaged.
                    for row in 0..<(h / 2) {
                        let top = source + row * 2 * sourceStride, bottom = top + sourceStride
                        let line = target + row * stride
                        for column in 0..<(w / 2) {
                            let sum =
                                Int(top[column * 2]) + Int(top[column * 2 + 1]) + Int(bottom[column * 2])
                                + Int(bottom[column * 2 + 1])
                            line[column] = UInt8((sum + 2) / 4)
                        }
                    }
                } else {
                    Self.chroma420(
                        source, stride: sourceStride, rows: sampling == TJSAMP_422 ? h : h / 2, columns: w / 2,
                        into: target, stride: stride, height: h)
                }
            }
        }
    }

    private static func copy(
        _ source: UnsafePointer<UInt8>, stride: Int, to target: UnsafeMutablePointer<UInt8>, stride targetStride: Int,
        width: Int, height: Int
    ) {
        for row in 0..<height {
            (target + row * targetStride).update(from: source + row * stride, count: width)
        }
    }

    /// A chroma plane of half width and `rows` rows (the picture's height for 4:2:2, half for
    /// 4:2:0) as a 4:2:0 plane: 4:2:2's row pairs averaged.
    private static func chroma420(
        _ source: UnsafePointer<UInt8>, stride: Int, rows: Int, columns: Int, into target: UnsafeMutablePointer<UInt8>,
        stride targetStride: Int, height: Int
    ) {
        if rows == height / 2 {
            return copy(source, stride: stride, to: target, stride: targetStride, width: columns, height: rows)
        }
        for row in 0..<(height / 2) {
            let top = source + row * 2 * stride, bottom = top + stride, line = target + row * targetStride
            for column in 0..<columns { line[column] = UInt8((Int(top[column]) + Int(bottom[column]) + 1) / 2) }
        }
    }

    private static func neutralChroma(_ out: H264Encoder.Planes, width: Int, height: Int) {
        for row in 0..<(height / 2) {
            (out.u + row * out.uStride).update(repeating: 128, count: width / 2)
            (out.v + row * out.vStride).update(repeating: 128, count: width / 2)
        }
    }
}
