import FieldcapCore
import FieldcapEncode

/// How a frame's pixels lie in its bytes, for the detector (which reads RGB or grey) and the
/// pixelation (which averages each colour component over a block). Each component is a grid of
/// samples: where it starts, the bytes between its rows and between its samples, and how many
/// pixels across and down one sample stands for (YUYV's chroma two across, NV12's two by two; a
/// Bayer mosaic's four filter colours each two by two, so a block averages each colour on its
/// own and stays a mosaic that demosaics to the block's colour; a JPEG's planes, Y then U then V,
/// each chroma sample standing for as many pixels as the JPEG's subsampling says).
public struct FrameLayout: Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case grey8, grey16, rgb8, yuyv, nv12
        /// An 8-bit Bayer mosaic (`bayer` says which filter is where).
        case bayer8
        /// Planar YUV as a JPEG decodes to (`init(jpegPlanes:width:height:)`).
        case yuvPlanes
    }

    struct Component: Equatable, Sendable {
        var offset: Int
        var rowBytes: Int
        var step: Int
        var across = 1
        var down = 1
        var sampleBytes = 1
    }

    public let kind: Kind
    public let width: Int
    public let height: Int
    /// A mosaic's filter pattern; nil for other kinds.
    public let bayer: BayerPattern?
    let components: [Component]
    /// The bytes a frame of this layout holds.
    public let byteCount: Int

    /// The smallest block a component's sample covers: boxes are aligned to it.
    var alignment: Int { components.map { max($0.across, $0.down) }.max() ?? 1 }

    /// `bayer`: the filter pattern of a `.bayer8` mosaic (and only of one).
    public init(_ kind: Kind, width: Int, height: Int, bayer: BayerPattern? = nil) {
        precondition(width > 0 && height > 0)
        precondition((kind == .bayer8) == (bayer != nil))
        precondition(kind != .yuvPlanes, "planes are laid out by init(jpegPlanes:width:height:)")
        // Chroma pairs (and NV12's rows of pairs, a mosaic's 2x2 blocks) whole: `of(_:)` says so
        // for a camera's format.
        precondition((kind != .yuyv && kind != .nv12 && kind != .bayer8) || (width % 2 == 0 && height % 2 == 0))
        self.kind = kind
        self.width = width
        self.height = height
        self.bayer = bayer
        switch kind {
        case .grey8:
            components = [Component(offset: 0, rowBytes: width, step: 1)]
        case .grey16:
            components = [Component(offset: 0, rowBytes: 2 * width, step: 2, sampleBytes: 2)]
        case .rgb8:
            components = (0..<3).map { Component(offset: $0, rowBytes: 3 * width, step: 3) }
        case .yuyv:
            components = [
                Component(offset: 0, rowBytes: 2 * width, step: 2),
                Component(offset: 1, rowBytes: 2 * width, step: 4, across: 2),
                Component(offset: 3, rowBytes: 2 * width, step: 4, across: 2),
            ]
        case .bayer8:
            components = [(0, 0), (1, 0), (0, 1), (1, 1)].map { column, row in
                Component(offset: row * width + column, rowBytes: 2 * width, step: 2, across: 2, down: 2)
            }
        case .nv12:
            components = [
                Component(offset: 0, rowBytes: width, step: 1),
                Component(offset: width * height, rowBytes: width, step: 2, across: 2, down: 2),
                Component(offset: width * height + 1, rowBytes: width, step: 2, across: 2, down: 2),
            ]
        case .yuvPlanes:
            preconditionFailure()
        }
        byteCount =
            switch kind {
            case .grey8, .bayer8: width * height
            case .grey16, .yuyv: 2 * width * height
            case .rgb8: 3 * width * height
            case .nv12: width * height * 3 / 2
            case .yuvPlanes: 0
            }
    }

    /// A `width` x `height` JPEG's YUV planes as libjpeg-turbo decodes them
    /// (`JPEGDecoder.decodePlanes`, laid out as `JPEGSubsampling.planes` says); a grey JPEG's
    /// one plane is `.grey8`.
    public init(jpegPlanes subsampling: JPEGSubsampling, width: Int, height: Int) {
        precondition(width > 0 && height > 0)
        let planes = subsampling.planes(width: width, height: height)
        guard let (across, down) = subsampling.chroma else {
            self.init(.grey8, width: width, height: height)
            return
        }
        let luma = planes.lumaWidth * planes.lumaHeight, chroma = planes.chromaWidth * planes.chromaHeight
        self.init(
            laidOut: .yuvPlanes, width: width, height: height,
            components: [
                Component(offset: 0, rowBytes: planes.lumaWidth, step: 1),
                Component(offset: luma, rowBytes: planes.chromaWidth, step: 1, across: across, down: down),
                Component(offset: luma + chroma, rowBytes: planes.chromaWidth, step: 1, across: across, down: down),
            ], byteCount: planes.bytes)
    }

    private init(laidOut kind: Kind, width: Int, height: Int, components: [Component], byteCount: Int) {
        self.kind = kind
        self.width = width
        self.height = height
        bayer = nil
        self.components = components
        self.byteCount = byteCount
    }

    /// The layout of a camera's raw frames, or why its faces cannot be covered as they are.
    public static func of(_ format: VideoFormat) -> Result<FrameLayout, FaceCoverError> {
        let kind: Kind
        switch format.pixelFormat {
        case .grey: kind = .grey8
        case .y16, .z16: kind = .grey16
        case .yuyv: kind = .yuyv
        case .nv12: kind = .nv12
        case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: kind = .bayer8
        default:
            return .failure(
                FaceCoverError(
                    "\(format.pixelFormat.rawValue) frames are not covered as they are "
                        + "(grey, Y16, YUYV, NV12 and Bayer are)"))
        }
        if (kind == .yuyv || kind == .nv12 || kind == .bayer8) && (format.width % 2 != 0 || format.height % 2 != 0) {
            return .failure(FaceCoverError("\(format): \(kind.rawValue) frames have an even size"))
        }
        return .success(
            FrameLayout(kind, width: format.width, height: format.height, bayer: format.pixelFormat.bayerPattern))
    }

    public var description: String {
        if let bayer { return "\(width)x\(height) bayer \(bayer.rawValue)" }
        if kind == .yuvPlanes, components.count == 3 {
            return "\(width)x\(height) YUV planes, chroma \(components[1].across)x\(components[1].down)"
        }
        return "\(width)x\(height) \(kind.rawValue)"
    }
}
