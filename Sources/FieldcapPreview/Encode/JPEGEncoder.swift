import CTurboJPEG
import FieldcapCore

/// Encodes a camera's frames as JPEG with libjpeg-turbo, from the frame's own planes: YUYV as
/// 4:2:2, NV12 as 4:2:0, GREY as greyscale, each without a colour conversion (libjpeg-turbo
/// takes YUV planes as they are). MJPEG frames are JPEGs already and pass as they are.
///
/// Thread-bound (the preview's thread): it owns its planes and output buffer, reused per frame.
public final class JPEGEncoder {
    public let format: VideoFormat
    public let quality: Int
    private let handle: tjhandle?
    private let subsampling: TJSAMP
    /// The chroma planes a packed format is split into, made once.
    private var chroma: (u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>)?
    private var luma: UnsafeMutablePointer<UInt8>?
    private let output: UnsafeMutablePointer<UInt8>?
    private let outputCapacity: Int

    /// Whether frames of `format` can be previewed, and if not, why.
    public static func problem(with format: VideoFormat) -> String? {
        switch format.pixelFormat {
        case .yuyv, .nv12, .grey, .mjpeg: return nil
        case .y16: return "\(format.pixelFormat.rawValue) has no preview (YUYV, NV12, GREY and MJPEG have)"
        }
    }

    /// - Parameter quality: 1 to 100, as libjpeg's (80 looks like the camera at a tenth of its
    ///   bytes; 95 and above cost much more for little).
    public init(format: VideoFormat, quality: Int = 80) throws(PreviewError) {
        if let problem = Self.problem(with: format) { throw PreviewError(.unsupportedFormat, problem) }
        guard format.width > 0, format.height > 0, format.width % 2 == 0 || format.pixelFormat == .grey,
            format.height % 2 == 0 || format.pixelFormat != .nv12
        else {
            throw PreviewError(.unsupportedFormat, "\(format) has no preview: odd sizes are not YUV")
        }
        self.format = format
        self.quality = min(100, max(1, quality))
        let width = format.width, height = format.height
        switch format.pixelFormat {
        case .yuyv: subsampling = TJSAMP_422
        case .nv12: subsampling = TJSAMP_420
        default: subsampling = TJSAMP_GRAY
        }
        if format.pixelFormat == .mjpeg {
            handle = nil
            output = nil
            outputCapacity = 0
            return
        }
        guard let handle = tjInitCompress() else {
            throw PreviewError(.encoder, "libjpeg-turbo could not start a compressor")
        }
        self.handle = handle
        outputCapacity = Int(tjBufSize(Int32(width), Int32(height), Int32(subsampling.rawValue)))
        output = .allocate(capacity: outputCapacity)
        switch format.pixelFormat {
        case .yuyv:
            luma = .allocate(capacity: width * height)
            chroma = (.allocate(capacity: width / 2 * height), .allocate(capacity: width / 2 * height))
        case .nv12:
            chroma = (.allocate(capacity: width / 2 * height / 2), .allocate(capacity: width / 2 * height / 2))
        default: break
        }
    }

    deinit {
        if let handle { tjDestroy(handle) }
        output?.deallocate()
        luma?.deallocate()
        chroma?.u.deallocate()
        chroma?.v.deallocate()
    }

    /// One frame's JPEG.
    public func encode(_ frame: UnsafeRawBufferPointer) throws(PreviewError) -> [UInt8] {
        if format.pixelFormat == .mjpeg { return Array(frame) }
        let width = format.width, height = format.height
        let needed = format.pixelFormat.frameBytes(width: width, height: height) ?? 0
        guard frame.count >= needed, let source = frame.baseAddress?.assumingMemoryBound(to: UInt8.self),
            let handle, let output
        else {
            throw PreviewError(.encoder, "a \(format) frame of \(frame.count) bytes is short of \(needed)")
        }
        var planes: [UnsafePointer<UInt8>?]
        let strides: [Int32]
        switch format.pixelFormat {
        case .yuyv:
            let (y, (u, v)) = (luma!, chroma!)
            // Y0 U Y1 V: every even byte is luma, the odd ones alternate U and V.
            for index in 0..<(width * height / 2) {
                let packed = source + index * 4
                y[index * 2] = packed[0]
                u[index] = packed[1]
                y[index * 2 + 1] = packed[2]
                v[index] = packed[3]
            }
            planes = [UnsafePointer(y), UnsafePointer(u), UnsafePointer(v)]
            strides = [Int32(width), Int32(width / 2), Int32(width / 2)]
        case .nv12:
            let (u, v) = chroma!
            let interleaved = source + width * height
            for index in 0..<(width / 2 * height / 2) {
                u[index] = interleaved[index * 2]
                v[index] = interleaved[index * 2 + 1]
            }
            planes = [source, UnsafePointer(u), UnsafePointer(v)]
            strides = [Int32(width), Int32(width / 2), Int32(width / 2)]
        default:
            planes = [source, nil, nil]
            strides = [Int32(width), 0, 0]
        }
        var destination: UnsafeMutablePointer<UInt8>? = output
        var size = UInt(outputCapacity)
        let result = tjCompressFromYUVPlanes(
            handle, &planes, Int32(width), strides, Int32(height), Int32(subsampling.rawValue), &destination, &size,
            Int32(quality), TJFLAG_NOREALLOC | TJFLAG_FASTDCT)
        guard result == 0 else {
            throw PreviewError(.encoder, "libjpeg-turbo: \(String(cString: tjGetErrorStr2(handle)))")
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
