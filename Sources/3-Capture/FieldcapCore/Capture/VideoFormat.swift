/// A camera stream's frames, as they come from the device.
public struct VideoFormat: Sendable, Equatable, CustomStringConvertible {
    /// Pixel formats fieldcap records: raw ones are stored losslessly, compressed ones passed
    /// through as they are.
    public enum PixelFormat: String, Sendable, CaseIterable {
        /// YUYV 4:2:2, 16 bits a pixel (`V4L2_PIX_FMT_YUYV`).
        case yuyv = "YUYV"
        /// Y plane then interleaved UV, 4:2:0 (`V4L2_PIX_FMT_NV12`).
        case nv12 = "NV12"
        /// 8-bit grey (`V4L2_PIX_FMT_GREY`).
        case grey = "GREY"
        /// 16-bit little-endian grey or depth (`V4L2_PIX_FMT_Y16`).
        case y16 = "Y16"
        /// 16-bit little-endian depth, each sample a distance in millimetres (`V4L2_PIX_FMT_Z16`,
        /// what UVC depth cameras such as RealSense offer). Stored like Y16.
        case z16 = "Z16"
        /// 8-bit Bayer mosaics, a raw sensor's colour filter as it reads out, named by the
        /// colours of its top-left 2x2 block: `V4L2_PIX_FMT_SBGGR8` (BA81), `SGBRG8` (GBRG),
        /// `SGRBG8` (GRBG) and `SRGGB8` (RGGB). One byte a pixel, stored as it comes.
        case bayerBGGR = "BA81"
        case bayerGBRG = "GBRG"
        case bayerGRBG = "GRBG"
        case bayerRGGB = "RGGB"
        /// Motion JPEG, passed through (`V4L2_PIX_FMT_MJPEG`).
        case mjpeg = "MJPG"
        /// Lossless FFV1 (RFC 9043), as `encode=ffv1` stores a camera: never captured, only
        /// stored. Decoded, a frame is the captured frame's bytes exactly.
        case ffv1 = "FFV1"
        /// H.264 from a V4L2 hardware encoder (`encode=h264`): stored only.
        case h264 = "H264"
        /// HEVC (H.265) from a V4L2 hardware encoder (`encode=hevc`): stored only.
        case hevc = "HEVC"
        /// FWHT, the codec of the kernel's virtual codec driver vicodec (`encode=fwht`), which
        /// stands in for hardware H.264 in the kernel tests: stored only.
        case fwht = "FWHT"

        /// What encoders make: never what a camera sends.
        public static let storedOnly: Set<PixelFormat> = [.ffv1, .h264, .hevc, .fwht]

        /// The formats a camera can deliver: all but the stored-only ones.
        public static let captured: [PixelFormat] = allCases.filter { !storedOnly.contains($0) }

        /// Y16 and Z16: one 16-bit little-endian sample a pixel.
        public var isSixteenBit: Bool { self == .y16 || self == .z16 }

        /// A Bayer format's colour filter pattern; nil for the others.
        public var bayerPattern: BayerPattern? {
            switch self {
            case .bayerBGGR: .bggr
            case .bayerGBRG: .gbrg
            case .bayerGRBG: .grbg
            case .bayerRGGB: .rggb
            default: nil
            }
        }

        /// Other names `format=` takes: the Bayer patterns by their colours (`BGGR`, `SBGGR8`).
        public static func named(_ name: String) -> PixelFormat? {
            let upper = name.uppercased()
            if upper == "MJPEG" { return .mjpeg }
            if let format = PixelFormat(rawValue: upper) { return format }
            let colours = upper.hasPrefix("S") && upper.hasSuffix("8") ? String(upper.dropFirst().dropLast()) : upper
            return BayerPattern(rawValue: colours.lowercased())?.pixelFormat
        }

        /// Bytes of one line of the first plane, packed (V4L2's `bytesperline` with no padding);
        /// nil for compressed formats.
        public func lineBytes(width: Int) -> Int? {
            switch self {
            case .yuyv, .y16, .z16: width * 2
            case .nv12, .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: width
            case .mjpeg, .ffv1, .h264, .hevc, .fwht: nil
            }
        }

        /// Bytes of one frame for raw formats; nil for compressed ones.
        public func frameBytes(width: Int, height: Int) -> Int? {
            switch self {
            case .yuyv, .y16, .z16: return width * height * 2
            case .nv12: return width * height * 3 / 2
            case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: return width * height
            case .mjpeg, .ffv1, .h264, .hevc, .fwht: return nil
            }
        }
    }

    public var width: Int
    public var height: Int
    public var pixelFormat: PixelFormat

    public init(width: Int, height: Int, pixelFormat: PixelFormat) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
    }

    public var description: String { "\(width)x\(height) \(pixelFormat.rawValue)" }
}

/// Which colour each pixel of a Bayer mosaic sensed: a 2x2 block repeated over the picture,
/// named by its colours left to right, top to bottom.
public enum BayerPattern: String, Sendable, CaseIterable {
    case bggr, gbrg, grbg, rggb

    public enum Colour: Sendable { case red, green, blue }

    /// The colour at `column`, `row`.
    @inline(__always)
    public func colour(column: Int, row: Int) -> Colour {
        let redColumn: Int, redRow: Int
        switch self {
        case .rggb: (redColumn, redRow) = (0, 0)
        case .grbg: (redColumn, redRow) = (1, 0)
        case .gbrg: (redColumn, redRow) = (0, 1)
        case .bggr: (redColumn, redRow) = (1, 1)
        }
        let onRedRow = row & 1 == redRow
        let onRedColumn = column & 1 == redColumn
        switch (onRedRow, onRedColumn) {
        case (true, true): return .red
        case (false, false): return .blue
        default: return .green
        }
    }

    /// The pixel format of this pattern at 8 bits.
    public var pixelFormat: VideoFormat.PixelFormat {
        switch self {
        case .bggr: .bayerBGGR
        case .gbrg: .bayerGBRG
        case .grbg: .bayerGRBG
        case .rggb: .bayerRGGB
        }
    }

    /// The ROS image encoding (`sensor_msgs/Image.encoding`): `bayer_bggr8`.
    public var rosEncoding: String { "bayer_\(rawValue)8" }
}
