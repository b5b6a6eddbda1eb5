import FieldcapCore

/// How a frame's pixels lie in its bytes, for the detector (which reads RGB or grey) and the
/// pixelation (which averages each colour component over a block). Each component is a grid of
/// samples: where it starts, the bytes between its rows and between its samples, and how many
/// pixels across and down one sample stands for (YUYV's chroma two across, NV12's two by two).
public struct FrameLayout: Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case grey8, grey16, rgb8, yuyv, nv12
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
    let components: [Component]

    /// The bytes a frame of this layout holds.
    public var byteCount: Int {
        switch kind {
        case .grey8: width * height
        case .grey16, .yuyv: 2 * width * height
        case .rgb8: 3 * width * height
        case .nv12: width * height * 3 / 2
        }
    }

    /// The smallest block a component's sample covers: boxes are aligned to it.
    var alignment: Int { kind == .yuyv || kind == .nv12 ? 2 : 1 }

    public init(_ kind: Kind, width: Int, height: Int) {
        precondition(width > 0 && height > 0)
        // Chroma pairs (and NV12's rows of pairs) whole: `of(_:)` says so for a camera's format.
        precondition((kind != .yuyv && kind != .nv12) || (width % 2 == 0 && height % 2 == 0))
        self.kind = kind
        self.width = width
        self.height = height
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
        case .nv12:
            components = [
                Component(offset: 0, rowBytes: width, step: 1),
                Component(offset: width * height, rowBytes: width, step: 2, across: 2, down: 2),
                Component(offset: width * height + 1, rowBytes: width, step: 2, across: 2, down: 2),
            ]
        }
    }

    /// The layout of a camera's raw frames, or why its faces cannot be covered as they are.
    public static func of(_ format: VideoFormat) -> Result<FrameLayout, FaceCoverError> {
        let kind: Kind
        switch format.pixelFormat {
        case .grey: kind = .grey8
        case .y16, .z16: kind = .grey16
        case .yuyv: kind = .yuyv
        case .nv12: kind = .nv12
        default:
            return .failure(
                FaceCoverError(
                    "\(format.pixelFormat.rawValue) frames are not covered as they are (grey, Y16, YUYV and NV12 are)"))
        }
        if (kind == .yuyv || kind == .nv12) && (format.width % 2 != 0 || format.height % 2 != 0) {
            return .failure(FaceCoverError("\(format): \(kind.rawValue) frames have an even size"))
        }
        return .success(FrameLayout(kind, width: format.width, height: format.height))
    }

    public var description: String { "\(width)x\(height) \(kind.rawValue)" }
}
