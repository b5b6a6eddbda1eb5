/// A grey image as floats, rows packed: what the offset check aligns. Small on purpose: a camera's
/// frame is averaged down to about `GreyImage.workingWidth` pixels across before anything else,
/// as a global turn needs no detail and an hour of frames must be quick to read.
///
/// Thread-safe (a value).
public struct GreyImage: Sendable {
    public let width: Int
    public let height: Int
    public var pixels: [Float]

    /// The width frames are averaged down to, at most.
    public static let workingWidth = 128

    public init(width: Int, height: Int, pixels: [Float]) {
        precondition(width > 0 && height > 0 && pixels.count == width * height)
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// 8-bit grey (`width * height` bytes, rows packed), averaged over `factor`-pixel squares; at
    /// least one square each way (`workingSize` says what a camera's frames give).
    public init(grey8 bytes: UnsafeRawBufferPointer, width: Int, height: Int, factor: Int) {
        precondition(factor > 0 && width >= factor && height >= factor && bytes.count >= width * height)
        let outWidth = width / factor, outHeight = height / factor
        var pixels = [Float](repeating: 0, count: outWidth * outHeight)
        let scale = 1 / Float(factor * factor)
        pixels.withUnsafeMutableBufferPointer { out in
            for row in 0..<outHeight {
                for column in 0..<outWidth {
                    var sum = 0
                    for y in (row * factor)..<(row * factor + factor) {
                        let line = y * width + column * factor
                        for x in line..<(line + factor) { sum += Int(bytes[x]) }
                    }
                    out[row * outWidth + column] = Float(sum) * scale
                }
            }
        }
        self.init(width: outWidth, height: outHeight, pixels: pixels)
    }

    /// The averaging factor that brings `width` down to at most `workingWidth`.
    public static func factor(forWidth width: Int) -> Int { max(1, (width + workingWidth - 1) / workingWidth) }

    /// The smallest working image alignment is given: under it a turn hardly moves a pixel, and
    /// the gradients have no room.
    public static let minimumWorkingSize = (width: 16, height: 12)

    /// The working image's size for a camera's frames of `width` x `height`.
    public static func workingSize(width: Int, height: Int) -> (width: Int, height: Int) {
        let factor = factor(forWidth: width)
        return (width / factor, height / factor)
    }

    /// Half the size, each pixel the mean of a 2x2 square: the next pyramid level.
    func halved() -> GreyImage {
        let outWidth = width / 2, outHeight = height / 2
        var out = [Float](repeating: 0, count: outWidth * outHeight)
        for row in 0..<outHeight {
            for column in 0..<outWidth {
                let at = 2 * row * width + 2 * column
                out[row * outWidth + column] =
                    0.25 * (pixels[at] + pixels[at + 1] + pixels[at + width] + pixels[at + width + 1])
            }
        }
        return GreyImage(width: outWidth, height: outHeight, pixels: out)
    }

    /// Mean squared difference from `other` (same size): the peer method's image-difference energy.
    func meanSquaredDifference(from other: GreyImage) -> Double {
        precondition(width == other.width && height == other.height)
        var sum: Float = 0
        for index in pixels.indices {
            let difference = pixels[index] - other.pixels[index]
            sum += difference * difference
        }
        return Double(sum) / Double(pixels.count)
    }
}
