import CTurboJPEG
import FieldcapCore

/// Encodes a camera's frames as JPEG with libjpeg-turbo, from the frame's own planes: YUYV as
/// 4:2:2, NV12 as 4:2:0, GREY as greyscale, each without a colour conversion (libjpeg-turbo
/// takes YUV planes as they are); a Bayer mosaic demosaiced into 4:2:0 colour (`YUVPlanes`).
/// MJPEG frames are JPEGs already and pass as they are.
///
/// Thread-bound (the preview's thread, an encoding worker): it owns its planes and output buffer,
/// reused per frame.
public final class JPEGEncoder {
    public let format: VideoFormat
    public let quality: Int
    /// libjpeg-turbo's fast integer DCT (the preview's choice: a little less accurate, a little
    /// faster) instead of its accurate one (the recorder's, as GStreamer's `jpegenc`).
    public let fastDCT: Bool
    private let handle: tjhandle?
    private let planes: YUVPlanes?
    private let output: UnsafeMutablePointer<UInt8>?
    private let outputCapacity: Int

    /// Whether frames of `format` can be previewed, and if not, why.
    public static func problem(with format: VideoFormat) -> String? {
        switch format.pixelFormat {
        case .mjpeg: return nil
        case .y16, .z16, .ffv1, .h264, .hevc, .fwht:
            return "\(format.pixelFormat.rawValue) has no preview (YUYV, NV12, GREY, Bayer and MJPEG have)"
        case .yuyv, .nv12, .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            return YUVPlanes.problem(with: format).map { "\($0): no preview" }
        }
    }

    /// - Parameter quality: 1 to 100, as libjpeg's (80 looks like the camera at a tenth of its
    ///   bytes; 95 and above cost much more for little).
    public init(format: VideoFormat, quality: Int = 80, fastDCT: Bool = true) throws(EncodeError) {
        if let problem = Self.problem(with: format) { throw EncodeError(.unsupportedFormat, problem) }
        self.format = format
        self.quality = min(100, max(1, quality))
        self.fastDCT = fastDCT
        guard format.pixelFormat != .mjpeg, let planes = YUVPlanes(format: format) else {
            handle = nil
            planes = nil
            output = nil
            outputCapacity = 0
            return
        }
        guard let handle = tjInitCompress() else {
            throw EncodeError(.encoder, "libjpeg-turbo could not start a compressor")
        }
        self.handle = handle
        self.planes = planes
        outputCapacity = Int(tjBufSize(Int32(format.width), Int32(format.height), Int32(planes.subsampling.rawValue)))
        output = .allocate(capacity: outputCapacity)
    }

    deinit {
        if let handle { tjDestroy(handle) }
        output?.deallocate()
    }

    /// One frame's JPEG.
    public func encode(_ frame: UnsafeRawBufferPointer) throws(EncodeError) -> [UInt8] {
        if format.pixelFormat == .mjpeg { return Array(frame) }
        return try Array(encodeInPlace(frame))
    }

    /// One frame's JPEG, read in place: valid until the next call. No allocation.
    public func encode<Result>(
        _ frame: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result {
        if format.pixelFormat == .mjpeg { return try body(frame) }
        return try body(try encodeInPlace(frame))
    }

    private func encodeInPlace(_ frame: UnsafeRawBufferPointer) throws(EncodeError) -> UnsafeRawBufferPointer {
        guard let handle, let output, let planes, let split = planes.split(frame) else {
            let needed = format.pixelFormat.frameBytes(width: format.width, height: format.height) ?? 0
            throw EncodeError(.encoder, "a \(format) frame of \(frame.count) bytes is short of \(needed)")
        }
        var yuv = split.planes
        var destination: UnsafeMutablePointer<UInt8>? = output
        var size = UInt(outputCapacity)
        let result = tjCompressFromYUVPlanes(
            handle, &yuv, Int32(format.width), split.strides, Int32(format.height), Int32(planes.subsampling.rawValue),
            &destination, &size, Int32(quality), TJFLAG_NOREALLOC | (fastDCT ? TJFLAG_FASTDCT : 0))
        guard result == 0 else {
            throw EncodeError(.encoder, "libjpeg-turbo: \(String(cString: tjGetErrorStr2(handle)))")
        }
        return UnsafeRawBufferPointer(start: output, count: Int(size))
    }
}
