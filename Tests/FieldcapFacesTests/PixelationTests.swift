import TestSupport
import Testing

@testable import FieldcapFaces

@Suite("Pixelation: each block its own mean, nothing outside the boxes touched")
struct PixelationTests {
    static let kinds: [FrameLayout.Kind] = [.grey8, .grey16, .rgb8, .yuyv, .nv12, .bayer8]

    /// Which bytes of a frame stand for pixels inside the box (aligned and cut as the pixelation
    /// does), per component, by the component's sample grid.
    static func inside(_ layout: FrameLayout, left: Int, top: Int, right: Int, bottom: Int) -> Set<Int> {
        var bytes = Set<Int>()
        for component in layout.components {
            for row in (top / component.down)..<((bottom + component.down - 1) / component.down) {
                for column in (left / component.across)..<((right + component.across - 1) / component.across) {
                    let at = component.offset + row * component.rowBytes + column * component.step
                    for byte in 0..<component.sampleBytes { bytes.insert(at + byte) }
                }
            }
        }
        return bytes
    }

    @Test("every layout: the box's blocks uniform with their mean, every other byte as it was", arguments: kinds)
    func blocks(kind: FrameLayout.Kind) {
        let layout = FrameLayout(kind, width: 64, height: 48, bayer: kind == .bayer8 ? .grbg : nil)
        var random = SplitMix64(seed: 48)
        let original = (0..<layout.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
        var frame = original
        // 10.3..30.3 x 7.7..22.7, aligned outward: 10..32 x 6..24 for the 2-aligned layouts.
        let box = FaceBox(x: 10.3, y: 7.7, width: 20, height: 15)
        let covered = frame.withUnsafeMutableBytes {
            Pixelation.cover([box], in: $0, layout: layout, blocksAcross: 4)
        }
        // The box out to whole chroma samples (10..31 x 7..23, or 10..32 x 6..24 by pairs), its
        // longer side in 4 blocks (22 / 4 -> 6 px), and out to the frame's grid of that block.
        let align = layout.alignment
        let left = 10 / align * align, top = 7 / align * align
        let right = (30 + align) / align * align, bottom = (22 + align) / align * align
        let longer = max(right - left, bottom - top)
        let block = ((longer + 3) / 4 + align - 1) / align * align
        #expect(block == 6)
        let gridLeft = left / block * block, gridTop = top / block * block
        let gridRight = (right + block - 1) / block * block, gridBottom = (bottom + block - 1) / block * block
        #expect(
            covered == [
                FaceBox(
                    x: Double(gridLeft), y: Double(gridTop), width: Double(gridRight - gridLeft),
                    height: Double(gridBottom - gridTop))
            ])
        let inside = Self.inside(layout, left: gridLeft, top: gridTop, right: gridRight, bottom: gridBottom)
        for index in 0..<layout.byteCount where !inside.contains(index) {
            #expect(frame[index] == original[index], "byte \(index) outside the covered area changed")
        }
        // Each component's samples in a block equal, and equal to their mean in the original.
        var y = gridTop
        while y < gridBottom {
            var x = gridLeft
            while x < gridRight {
                for component in layout.components {
                    let samples = Self.inside(
                        layout, left: x, top: y, right: min(x + block, gridRight), bottom: min(y + block, gridBottom)
                    ).intersection(Set(Self.componentBytes(layout, component)))
                    let value = { (bytes: [UInt8], at: Int) -> Int in
                        component.sampleBytes == 2 ? Int(bytes[at]) | Int(bytes[at + 1]) << 8 : Int(bytes[at])
                    }
                    let mean = (samples.map { value(original, $0) }.reduce(0, +) + samples.count / 2) / samples.count
                    for at in samples { #expect(value(frame, at) == mean, "a block at \(x),\(y) is not its mean") }
                }
                x += block
            }
            y += block
        }
    }

    static func componentBytes(_ layout: FrameLayout, _ component: FrameLayout.Component) -> [Int] {
        var bytes: [Int] = []
        for row in 0..<(layout.height / component.down) {
            for column in 0..<(layout.width / component.across) {
                bytes.append(component.offset + row * component.rowBytes + column * component.step)
            }
        }
        return bytes
    }

    @Test("a box across the frame's edge is cut there; one wholly outside changes nothing")
    func edges() {
        let layout = FrameLayout(.yuyv, width: 32, height: 16)
        var random = SplitMix64(seed: 7)
        let original = (0..<layout.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
        var frame = original
        frame.withUnsafeMutableBytes {
            Pixelation.cover(
                [FaceBox(x: -40, y: -40, width: 20, height: 20), FaceBox(x: 40, y: 0, width: 8, height: 8)], in: $0,
                layout: layout, blocksAcross: 3)
        }
        #expect(frame == original)
        frame.withUnsafeMutableBytes {
            Pixelation.cover([FaceBox(x: 24, y: -4, width: 20, height: 12)], in: $0, layout: layout, blocksAcross: 3)
        }
        let covered = Self.inside(layout, left: 24, top: 0, right: 32, bottom: 8)
        #expect((0..<layout.byteCount).allSatisfy { covered.contains($0) || frame[$0] == original[$0] })
        #expect(covered.contains { frame[$0] != original[$0] })
    }
}
