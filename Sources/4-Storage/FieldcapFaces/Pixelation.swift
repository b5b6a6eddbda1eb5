/// Covers boxes of a frame with blocks of their own average: every component of every pixel in a
/// block becomes the block's mean, so what the block held cannot be recovered from it (unlike a
/// blur, which a deconvolution can partly undo). A box is split into `blocksAcross` blocks along
/// its longer side (a face grown by the margin then spans about four), aligned to the layout's
/// chroma samples and cut at the frame's edges. Pixels outside every box are left as they are.
public enum Pixelation {
    public static func cover(
        _ boxes: [FaceBox], in frame: UnsafeMutableRawBufferPointer, layout: FrameLayout, blocksAcross: Int
    ) {
        precondition(frame.count >= layout.byteCount && blocksAcross > 0)
        let align = layout.alignment
        for box in boxes {
            // Outward to the alignment, inward to the frame.
            let left = max(0, Int((box.x / Double(align)).rounded(.down)) * align)
            let top = max(0, Int((box.y / Double(align)).rounded(.down)) * align)
            let right = min(layout.width, Int(((box.x + box.width) / Double(align)).rounded(.up)) * align)
            let bottom = min(layout.height, Int(((box.y + box.height) / Double(align)).rounded(.up)) * align)
            guard right > left, bottom > top else { continue }
            let longer = max(right - left, bottom - top)
            let block = max(align, (longer + blocksAcross - 1) / blocksAcross / align * align)
            var y = top
            while y < bottom {
                var x = left
                while x < right {
                    for component in layout.components {
                        average(
                            component, in: frame, x: x, y: y, width: min(block, right - x),
                            height: min(block, bottom - y))
                    }
                    x += block
                }
                y += block
            }
        }
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
