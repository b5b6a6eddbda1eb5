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
    /// A V4L2 memory-to-memory hardware encoder (H.264, HEVC, or vicodec's FWHT in tests).
    case hardware(HardwareEncoding)

    /// libjpeg's and GStreamer's `jpegenc` default: a camera frame at a tenth of its bytes with
    /// no visible loss (above 40 dB PSNR on a test pattern, see the encoder's tests).
    public static let defaultJPEGQuality = 85

    /// As `encode=` spells it: `raw`, `jpeg:85`.
    public var description: String {
        switch self {
        case .raw: "raw"
        case .jpeg(let quality): "jpeg:\(quality)"
        case .ffv1: "ffv1"
        case .hardware(let hardware): hardware.description
        }
    }

    /// The codec's name in the sidecar and in `fieldcap list`.
    public var codecName: String {
        switch self {
        case .raw: "raw"
        case .jpeg: "jpeg"
        case .ffv1: "ffv1"
        case .hardware(let hardware): hardware.codec.rawValue
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
        case .hardware(let hardware):
            return VideoFormat(width: captured.width, height: captured.height, pixelFormat: hardware.codec.storedFormat)
        }
    }
}

/// `encode=h264[:BITRATE]`, `hevc[:BITRATE]` or `fwht`, with the camera's `encoder=` node.
public struct HardwareEncoding: Sendable, Equatable, CustomStringConvertible {
    public enum Codec: String, Sendable, CaseIterable {
        case h264
        case hevc
        /// vicodec's codec: what the kernel tests encode with, through the same code.
        case fwht

        /// The coded format's fourcc on the encoder's CAPTURE queue.
        public var fourcc: String {
            switch self {
            case .h264: "H264"
            case .hevc: "HEVC"
            case .fwht: "FWHT"
            }
        }

        public var storedFormat: VideoFormat.PixelFormat {
            switch self {
            case .h264: .h264
            case .hevc: .hevc
            case .fwht: .fwht
            }
        }

        /// Whether the codec has a bit rate to ask for (FWHT has a quantiser instead).
        public var takesBitrate: Bool { self != .fwht }
    }

    public var codec: Codec
    /// Bits per second asked of the encoder; nil leaves the driver's default.
    public var bitrate: Int?
    /// The encoder's node (`encoder=/dev/video11`); nil finds the first that can.
    public var device: String?

    public init(codec: Codec, bitrate: Int? = nil, device: String? = nil) {
        self.codec = codec
        self.bitrate = bitrate
        self.device = device
    }

    /// As `encode=` spells it: `h264`, `h264:4000000`.
    public var description: String { codec.rawValue + (bitrate.map { ":\($0)" } ?? "") }
}
