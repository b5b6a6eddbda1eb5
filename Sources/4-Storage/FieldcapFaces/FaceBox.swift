/// A face's box in pixels of its frame: the top left corner, the size, and how sure the detector
/// was (1 for a box carried between detections, which is not a detection's score).
public struct FaceBox: Equatable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double
    public var score: Double

    public init(x: Double, y: Double, width: Double, height: Double, score: Double = 1) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
        self.score = score
    }

    public var centerX: Double { x + width / 2 }
    public var centerY: Double { y + height / 2 }
    var area: Double { max(0, width) * max(0, height) }

    /// The part of two boxes they share, over their union.
    public func overlap(_ other: FaceBox) -> Double {
        let w = min(x + width, other.x + other.width) - max(x, other.x)
        let h = min(y + height, other.y + other.height) - max(y, other.y)
        guard w > 0, h > 0 else { return 0 }
        let shared = w * h
        return shared / (area + other.area - shared)
    }

    /// The box grown by `fraction` of its size on every side.
    public func grown(by fraction: Double) -> FaceBox {
        FaceBox(
            x: x - width * fraction, y: y - height * fraction, width: width * (1 + 2 * fraction),
            height: height * (1 + 2 * fraction), score: score)
    }

    /// The smallest box holding both.
    func union(_ other: FaceBox) -> FaceBox {
        let left = min(x, other.x), top = min(y, other.y)
        let right = max(x + width, other.x + other.width), bottom = max(y + height, other.y + other.height)
        return FaceBox(x: left, y: top, width: right - left, height: bottom - top, score: max(score, other.score))
    }

    public var description: String {
        "\(Int(x.rounded())),\(Int(y.rounded())) \(Int(width.rounded()))x\(Int(height.rounded()))"
    }
}

extension FaceBox {
    /// `[x,y,width,height]` in whole pixels, for the exports' per-frame records.
    public var pixelsJSON: String {
        "[" + [x, y, width, height].map { String(Int($0.rounded())) }.joined(separator: ",") + "]"
    }
}
