/// Covers boxes of a frame with blocks of their own average: every component of every pixel in a
/// block becomes the block's mean, so what the block held cannot be recovered from it (unlike a
/// blur, which a deconvolution can partly undo). A box's longer side makes `blocksAcross` blocks
/// (a face grown by the margin then spans about four), each a multiple of the layout's chroma
/// samples; the blocks lie on the frame's own grid (multiples of the block size from its corner),
/// so the covered area reaches out from the box to the grid's lines, and is cut at the frame's
/// edges. Pixels outside the covered areas are left as they are.
public enum Pixelation {
    /// Returns the areas covered, one a box: exactly the pixels averaged.
    @discardableResult
    public static func cover(
        _ boxes: [FaceBox], in frame: UnsafeMutableRawBufferPointer, layout: FrameLayout, blocksAcross: Int
    ) -> [FaceBox] {
        precondition(frame.count >= layout.byteCount && blocksAcross > 0)
        let align = layout.alignment
        var covered: [FaceBox] = []
        for box in boxes {
            // Outward to the alignment, inward to the frame.
            let left = max(0, Int((box.x / Double(align)).rounded(.down)) * align)
            let top = max(0, Int((box.y / Double(align)).rounded(.down)) * align)
            let right = min(layout.width, Int(((box.x + box.width) / Double(align)).rounded(.up)) * align)
            let bottom = min(layout.height, Int(((box.y + box.height) / Double(align)).rounded(.up)) * align)
            guard right > left, bottom > top else { continue }
            let longer = max(right - left, bottom - top)
            let block = max(align, ((longer + blocksAcross - 1) / blocksAcross + align - 1) / align * align)
            // The frame's grid, not the box's: a face covered frame after frame by boxes that move
            // a little is averaged over the same blocks while the block size holds, rather than
            // over shifted ones whose averages a reconstruction could combine.
            let gridLeft = left / block * block, gridTop = top / block * block
            let gridRight = min(layout.width, (right + block - 1) / block * block)
            let gridBottom = min(layout.height, (bottom + block - 1) / block * block)
            var y = gridTop
            while y < gridBottom {
                var x = gridLeft
                while x < gridRight {
                    for component in layout.components {
                        average(
                            component, in: frame, x: x, y: y, width: min(block, gridRight - x),
                            height: min(block, gridBottom - y))
                    }
                    x += block
                }
                y += block
            }
            covered.append(
                FaceBox(
                    x: Double(gridLeft), y: Double(gridTop), width: Double(gridRight - gridLeft),
                    height: Double(gridBottom - gridTop), score: box.score))
        }
        return covered
    }

    /// Sets the component's samples that stand for pixels [x, x + width) x [y, y + height) to their mean.
    private static func average(
        _ component: FrameLayout.Component, in frame: UnsafeMutableRawBufferPointer, x: Int, y: Int, width: Int,
        height: Int
    ) {
        let columns = (x / component.across)..<((x + width + component.across - 1) / component.across)
        let rows = (y / component.down)..<((y + height + component.down - 1) / component.down)
        var sum = 0, count = 0
        for row in rows {
            let start = component.offset + row * component.rowBytes
            for column in columns {
                sum += sample(frame, at: start + column * component.step, bytes: component.sampleBytes)
                count += 1
            }
        }
        guard count > 0 else { return }
        let mean = (sum + count / 2) / count
        for row in rows {
            let start = component.offset + row * component.rowBytes
            for column in columns {
                let at = start + column * component.step
                frame[at] = UInt8(truncatingIfNeeded: mean)
                if component.sampleBytes == 2 { frame[at + 1] = UInt8(truncatingIfNeeded: mean >> 8) }
            }
        }
    }

    private static func sample(_ frame: UnsafeMutableRawBufferPointer, at index: Int, bytes: Int) -> Int {
        bytes == 2 ? Int(frame[index]) | Int(frame[index + 1]) << 8 : Int(frame[index])
    }
}
