import CTurboJPEG

/// How a JPEG samples its chroma (libjpeg-turbo's `TJSAMP`): how many pixels across and down one
/// chroma sample stands for, or none for a grey JPEG.
public enum JPEGSubsampling: Int32, Sendable, CaseIterable {
    case yuv444 = 0
    case yuv422 = 1
    case yuv420 = 2
    case grey = 3
    case yuv440 = 4
    case yuv411 = 5

    /// Pixels across and down per chroma sample; nil for grey.
    public var chroma: (across: Int, down: Int)? {
        switch self {
        case .yuv444: (1, 1)
        case .yuv422: (2, 1)
        case .yuv420: (2, 2)
        case .yuv440: (1, 2)
        case .yuv411: (4, 1)
        case .grey: nil
        }
    }

    /// The planes of a `width` x `height` picture as libjpeg-turbo lays them out with no row
    /// padding (`tjPlaneWidth`, `tjPlaneHeight`): the luma plane out to whole chroma samples
    /// (a 35x35 4:2:2 picture's is 36x35), each chroma plane that divided by the subsampling.
    public func planes(width: Int, height: Int) -> Planes {
        let (across, down) = chroma ?? (1, 1)
        let lumaWidth = (width + across - 1) / across * across, lumaHeight = (height + down - 1) / down * down
        return Planes(
            lumaWidth: lumaWidth, lumaHeight: lumaHeight, chromaWidth: chroma == nil ? 0 : lumaWidth / across,
            chromaHeight: chroma == nil ? 0 : lumaHeight / down)
    }

    /// Where a picture's planes lie, each row packed: Y, then U, then V.
    public struct Planes: Equatable, Sendable {
        public var lumaWidth: Int
        public var lumaHeight: Int
        public var chromaWidth: Int
        public var chromaHeight: Int

        public var bytes: Int { lumaWidth * lumaHeight + 2 * chromaWidth * chromaHeight }
    }
}

/// YUV planes, as `JPEGDecoder.decodePlanes` gives them, to a JPEG of the same subsampling
/// (libjpeg-turbo, its accurate DCT): an MJPEG camera's frame written again once its faces are
/// covered in its own planes, so outside the faces only the quantisation is done again.
///
/// Thread-bound: one per camera and thread (it owns a libjpeg-turbo handle).
public final class YUVPlanesJPEGEncoder {
    public let width: Int
    public let height: Int
    public let quality: Int
    private let handle: tjhandle

    public init(width: Int, height: Int, quality: Int) throws(EncodeError) {
        guard let handle = tjInitCompress() else {
            throw EncodeError(.encoder, "libjpeg-turbo could not start an encoder")
        }
        self.width = width
        self.height = height
        self.quality = quality
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    /// One picture's JPEG, from its planes laid out as `subsampling.planes` says.
    public func encode(_ planes: [UInt8], subsampling: JPEGSubsampling) throws(EncodeError) -> [UInt8] {
        let needed = subsampling.planes(width: width, height: height).bytes
        guard planes.count >= needed else {
            throw EncodeError(
                .encoder,
                "\(width)x\(height) planes of subsampling \(subsampling) hold \(needed) bytes, not \(planes.count)")
        }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let result = planes.withUnsafeBufferPointer {
            tjCompressFromYUV(
                handle, $0.baseAddress, Int32(width), 1, Int32(height), subsampling.rawValue, &output, &size,
                Int32(quality), 0)
        }
        defer { if let output { tjFree(output) } }
        guard result == 0, let output else {
            throw EncodeError(
                .encoder, "libjpeg-turbo could not encode a frame: \(String(cString: tjGetErrorStr2(handle)))")
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
