/// How a camera's frames are stored: as the camera delivers them (`raw`: lossless frames, or
/// MJPEG passed through), or compressed beside the camera's writer (`FieldcapEncode`).
public enum VideoEncoding: Sendable, Equatable, CustomStringConvertible {
    /// The frames as captured: today's lossless raw video, MJPEG passed through.
    case raw
    /// JPEG through libjpeg-turbo at `quality` (1-100), from the camera's own YUV planes,
    /// stored as MJPEG.
    case jpeg(quality: Int)
    /// Lossless FFV1 through FFmpeg's libavcodec: the camera's bytes exactly, in about a third
    /// to a half of the space (Y16 and Z16 included).
    case ffv1

    /// libjpeg's and GStreamer's `jpegenc` default: a camera frame at a tenth of its bytes with
    /// no visible loss (above 40 dB PSNR on a test pattern, see the encoder's tests).
    public static let defaultJPEGQuality = 85

    /// As `encode=` spells it: `raw`, `jpeg:85`.
    public var description: String {
        switch self {
        case .raw: "raw"
        case .jpeg(let quality): "jpeg:\(quality)"
        case .ffv1: "ffv1"
        }
    }

    /// The codec's name in the sidecar and in `fieldcap list`.
    public var codecName: String {
        switch self {
        case .raw: "raw"
        case .jpeg: "jpeg"
        case .ffv1: "ffv1"
        }
    }

    /// Whether frames go through an encoder (not `raw`, and not an MJPEG camera's own JPEGs).
    public func encodes(_ captured: VideoFormat) -> Bool {
        self != .raw && captured.pixelFormat != .mjpeg
    }

    /// The format a camera's frames are stored in: the captured one for `raw` (and for an MJPEG
    /// camera), MJPEG of the same size for `jpeg`, FFV1 for `ffv1`.
    public func storedFormat(for captured: VideoFormat) -> VideoFormat {
        guard encodes(captured) else { return captured }
        switch self {
        case .raw: return captured
        case .jpeg: return VideoFormat(width: captured.width, height: captured.height, pixelFormat: .mjpeg)
        case .ffv1: return VideoFormat(width: captured.width, height: captured.height, pixelFormat: .ffv1)
        }
    }
}
