import CTurboJPEG

/// An MJPEG camera's frames decoded (libjpeg-turbo) to RGB or grey, for what reads pixels (the
/// exports' images), or to the YUV planes the JPEG holds, for what writes the frame again
/// (`YUVPlanesJPEGEncoder`: no colour conversion, no chroma resampled, only the quantisation
/// done again).
///
/// Thread-bound: one per camera and thread (it owns a libjpeg-turbo handle).
public final class JPEGDecoder {
    public enum Pixels: Sendable {
        case rgb8
        case grey8

        var channels: Int { self == .rgb8 ? 3 : 1 }
        var turboFormat: TJPF { self == .rgb8 ? TJPF_RGB : TJPF_GRAY }
    }

    /// Remade after a frame that does not decode (`restart`).
    private var handle: tjhandle?

    /// A libjpeg-turbo decompressor of its own.
    public init() throws(EncodeError) {
        guard let handle = tjInitDecompress() else {
            throw EncodeError(.encoder, "libjpeg-turbo could not start a decoder")
        }
        self.handle = handle
    }

    deinit { if let handle { tjDestroy(handle) } }

    /// Decodes one JPEG to `pixels`, rows packed. `size`: the size the stream records, refused
    /// otherwise before anything is decoded (a corrupt header can claim 65535 squared); nil
    /// decodes at the JPEG's own size.
    public func decode(
        _ frame: UnsafeRawBufferPointer, to pixels: Pixels, size: (width: Int, height: Int)? = nil
    ) throws(EncodeError) -> (width: Int, height: Int, bytes: [UInt8]) {
        guard let handle, let base = frame.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw EncodeError(.encoder, "an MJPEG frame of \(frame.count) bytes does not decode")
        }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colourspace: Int32 = 0
        let header = tjDecompressHeader3(
            handle, base, UInt(frame.count), &width, &height, &subsampling, &colourspace)
        guard header == 0, width > 0, height > 0 else { throw failure() }
        if let size, Int(width) != size.width || Int(height) != size.height {
            throw EncodeError(
                .encoder, "an MJPEG frame of \(width)x\(height) in a stream of \(size.width)x\(size.height)")
        }
        let channels = pixels.channels
        var decoded = [UInt8](repeating: 0, count: Int(width) * Int(height) * channels)
        let result = decoded.withUnsafeMutableBufferPointer { out in
            tjDecompress2(
                handle, base, UInt(frame.count), out.baseAddress, width, width * Int32(channels), height,
                Int32(pixels.turboFormat.rawValue), 0)
        }
        // A warning ("Corrupt JPEG data: extraneous bytes", common from UVC cameras) leaves the
        // picture decoded.
        guard result == 0 || tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) else { throw failure() }
        return (Int(width), Int(height), decoded)
    }

    /// Decodes one JPEG to the planes it codes, laid out as `subsampling.planes` says: Y, then
    /// U and V unless it is grey. `size` as for `decode`. A JPEG coded in RGB or CMYK (no camera
    /// sends one) is refused rather than its planes taken for YUV.
    public func decodePlanes(
        _ frame: UnsafeRawBufferPointer, size: (width: Int, height: Int)
    ) throws(EncodeError) -> (subsampling: JPEGSubsampling, bytes: [UInt8]) {
        guard let handle, let base = frame.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw EncodeError(.encoder, "an MJPEG frame of \(frame.count) bytes does not decode")
        }
        var width: Int32 = 0, height: Int32 = 0, sampling: Int32 = 0, colourspace: Int32 = 0
        let header = tjDecompressHeader3(handle, base, UInt(frame.count), &width, &height, &sampling, &colourspace)
        guard header == 0, width > 0, height > 0 else { throw failure() }
        guard Int(width) == size.width, Int(height) == size.height else {
            throw EncodeError(
                .encoder, "an MJPEG frame of \(width)x\(height) in a stream of \(size.width)x\(size.height)")
        }
        guard colourspace == Int32(TJCS_YCbCr.rawValue) || colourspace == Int32(TJCS_GRAY.rawValue) else {
            throw EncodeError(.encoder, "an MJPEG frame coded in libjpeg-turbo's colourspace \(colourspace), not YCbCr")
        }
        guard let subsampling = JPEGSubsampling(rawValue: sampling) else {
            throw EncodeError(
                .encoder, "an MJPEG frame with chroma subsampling \(sampling), which is not decoded to planes")
        }
        var planes = [UInt8](repeating: 0, count: subsampling.planes(width: size.width, height: size.height).bytes)
        let result = planes.withUnsafeMutableBufferPointer { out in
            tjDecompressToYUV2(handle, base, UInt(frame.count), out.baseAddress, width, 1, height, 0)
        }
        guard result == 0 || tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) else { throw failure() }
        return (subsampling, planes)
    }

    /// The decoder's message, and a fresh decoder: libjpeg-turbo's is left mid-frame by some
    /// errors (a header whose size is over its limit), and then refuses every frame after, so
    /// one bad frame would lose the rest.
    private func failure() -> EncodeError {
        let problem = handle.map { String(cString: tjGetErrorStr2($0)) } ?? "no decoder"
        if let handle { tjDestroy(handle) }
        handle = tjInitDecompress()
        return EncodeError(.encoder, "an MJPEG frame does not decode: \(problem)")
    }
}
