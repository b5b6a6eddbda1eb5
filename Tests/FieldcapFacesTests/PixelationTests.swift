import TestSupport
import Testing

@testable import FieldcapFaces

@Suite("Pixelation: each block its own mean, nothing outside the boxes touched")
struct PixelationTests {
    static let kinds: [FrameLayout.Kind] = [.grey8, .grey16, .rgb8, .yuyv, .nv12]

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
        let layout = FrameLayout(kind, width: 64, height: 48)
        var random = SplitMix64(seed: 48)
        let original = (0..<layout.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
        var frame = original
        // 10.3..30.3 x 7.7..22.7, aligned outward: 10..32 x 6..24 for the 2-aligned layouts.
        let box = FaceBox(x: 10.3, y: 7.7, width: 20, height: 15)
        frame.withUnsafeMutableBytes { Pixelation.cover([box], in: $0, layout: layout, blocksAcross: 4) }
        let align = layout.alignment
        let left = 10 / align * align, top = 7 / align * align
        let right = (30 + align) / align * align, bottom = (22 + align) / align * align
        let covered = Self.inside(layout, left: left, top: top, right: right, bottom: bottom)
        for index in 0..<layout.byteCount where !covered.contains(index) {
            #expect(frame[index] == original[index], "byte \(index) outside the box changed")
        }
        // Blocks of ceil(longest side / 4), aligned: each component's samples in a block equal,
        // and equal to their mean in the original.
        let longer = max(right - left, bottom - top)
        let block = max(align, (longer + 3) / 4 / align * align)
        var y = top
        while y < bottom {
            var x = left
            while x < right {
                for component in layout.components {
                    let samples = Self.inside(
                        FrameLayout(kind, width: 64, height: 48), left: x, top: y, right: min(x + block, right),
                        bottom: min(y + block, bottom)
                    ).intersection(
                        Set(
                            Self.componentBytes(layout, component))
                    ).filter { ($0 - component.offset) % component.sampleBytes == 0 }
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
