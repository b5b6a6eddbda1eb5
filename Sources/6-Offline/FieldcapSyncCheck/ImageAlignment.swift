#if canImport(Glibc)
    import Glibc
#endif

/// The global motion between two frames of a turning camera, found by dense alignment: the shift
/// and in-plane rotation (about the image's centre) that carry the first frame onto the second,
/// by Gauss–Newton on the image gradients (Lucas–Kanade) from the coarsest level of a pyramid to
/// the finest. A camera that turns about its centre sees, for small turns, a shift of its focal
/// length times the turn about x and y, and a rotation by its turn about the optical axis.
///
/// Thread-safe (a value).
public struct ImageAlignment: Sendable, Equatable {
    /// Pixels of the image aligned (the working size, not the camera's).
    public var shiftX: Double
    public var shiftY: Double
    /// Radians.
    public var rotation: Double

    public static let none = ImageAlignment(shiftX: 0, shiftY: 0, rotation: 0)

    /// At most this many halvings below the working size (fewer where a level would be under 32x24),
    /// so a shift of up to about 2^levels pixels a frame is still found.
    static let pyramidLevels = 3
    static let iterationsPerLevel = 8

    /// The pyramid `align` takes: the image, then each half of the one before (while it stays
    /// big enough to align).
    public static func pyramid(_ image: GreyImage) -> [GreyImage] {
        var levels = [image]
        while levels.count <= pyramidLevels, levels.last!.width >= 32, levels.last!.height >= 24 {
            levels.append(levels.last!.halved())
        }
        return levels
    }

    /// The motion carrying `first` onto `second` (pyramids of images of one size).
    public static func align(_ first: [GreyImage], _ second: [GreyImage]) -> ImageAlignment {
        precondition(first.count == second.count)
        var motion = ImageAlignment.none
        for level in first.indices.reversed() {
            let scale = Double(1 << level)
            var local = ImageAlignment(
                shiftX: motion.shiftX / scale, shiftY: motion.shiftY / scale, rotation: motion.rotation)
            for _ in 0..<iterationsPerLevel {
                guard let step = gaussNewtonStep(first[level], second[level], at: local) else { break }
                local.shiftX += step.shiftX
                local.shiftY += step.shiftY
                local.rotation += step.rotation
                if abs(step.shiftX) + abs(step.shiftY) < 0.005 && abs(step.rotation) < 0.00005 { break }
            }
            motion = ImageAlignment(
                shiftX: local.shiftX * scale, shiftY: local.shiftY * scale, rotation: local.rotation)
        }
        return motion
    }

    /// One step: the residual `second(warp(x)) - first(x)` linearised with the first image's
    /// gradients (which `second` has where the two agree), so each step solves a 3x3 system.
    private static func gaussNewtonStep(
        _ first: GreyImage, _ second: GreyImage, at motion: ImageAlignment
    ) -> ImageAlignment? {
        let width = first.width, height = first.height
        // The gradients need a pixel either side.
        guard width >= 3, height >= 3 else { return nil }
        let centreX = Double(width - 1) / 2, centreY = Double(height - 1) / 2
        let cosine = cos(motion.rotation), sine = sin(motion.rotation)
        // The normal equations' upper triangle and right side, in Double: thousands of terms.
        var h00 = 0.0, h01 = 0.0, h02 = 0.0, h11 = 0.0, h12 = 0.0, h22 = 0.0
        var b0 = 0.0, b1 = 0.0, b2 = 0.0
        var used = 0
        first.pixels.withUnsafeBufferPointer { a in
            second.pixels.withUnsafeBufferPointer { b in
                for row in 1..<(height - 1) {
                    let v = Double(row) - centreY
                    for column in 1..<(width - 1) {
                        let u = Double(column) - centreX
                        let x = cosine * u - sine * v + centreX + motion.shiftX
                        let y = sine * u + cosine * v + centreY + motion.shiftY
                        guard x >= 0, y >= 0, x < Double(width - 1), y < Double(height - 1) else { continue }
                        let x0 = Int(x), y0 = Int(y)
                        let fx = x - Double(x0), fy = y - Double(y0)
                        let at = y0 * width + x0
                        let top = Double(b[at]) + (Double(b[at + 1]) - Double(b[at])) * fx
                        let bottom = Double(b[at + width]) + (Double(b[at + width + 1]) - Double(b[at + width])) * fx
                        let here = row * width + column
                        let error = top + (bottom - top) * fy - Double(a[here])
                        let gx = 0.5 * (Double(a[here + 1]) - Double(a[here - 1]))
                        let gy = 0.5 * (Double(a[here + width]) - Double(a[here - width]))
                        let gr = gy * u - gx * v
                        h00 += gx * gx
                        h01 += gx * gy
                        h02 += gx * gr
                        h11 += gy * gy
                        h12 += gy * gr
                        h22 += gr * gr
                        b0 -= gx * error
                        b1 -= gy * error
                        b2 -= gr * error
                        used += 1
                    }
                }
            }
        }
        guard used >= 16 else { return nil }
        // Cramer's rule on the symmetric 3x3 system.
        let c00 = h11 * h22 - h12 * h12, c01 = h02 * h12 - h01 * h22, c02 = h01 * h12 - h02 * h11
        let determinant = h00 * c00 + h01 * c01 + h02 * c02
        guard abs(determinant) > 1e-9 else { return nil }
        let c11 = h00 * h22 - h02 * h02, c12 = h01 * h02 - h00 * h12, c22 = h00 * h11 - h01 * h01
        return ImageAlignment(
            shiftX: (c00 * b0 + c01 * b1 + c02 * b2) / determinant,
            shiftY: (c01 * b0 + c11 * b1 + c12 * b2) / determinant,
            rotation: (c02 * b0 + c12 * b1 + c22 * b2) / determinant)
    }
}
