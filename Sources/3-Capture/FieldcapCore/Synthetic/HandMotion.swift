#if canImport(Glibc)
    import Glibc
#endif

/// A rig turned by hand, as a known truth for measuring a camera–IMU time offset: an angular
/// velocity that is a sum of sinusoids at unrelated frequencies (so no two stretches of it look
/// alike, as a cross-correlation needs), and the rotation it integrates to, in closed form. Both
/// are functions of absolute time, so a camera and an IMU that each read it at their own stamps
/// share it without sharing state.
///
/// Thread-safe (immutable).
public struct HandMotion: Sendable {
    /// One sinusoid of one axis: `amplitude` rad/s at `frequency` Hz.
    struct Term: Sendable {
        var amplitude: Double
        var frequency: Double
        var phase: Double
    }

    /// Each axis's terms (x, y, z).
    private let axes: [[Term]]

    /// The hand's motion: about 1 rad/s rms, mostly between 0.3 and 3 Hz, and turns of ±0.1–0.3 rad,
    /// as a rig is waved to calibrate it. The same every time.
    public static let waved = HandMotion(axes: [
        [
            Term(amplitude: 0.9, frequency: 0.53, phase: 0.3), Term(amplitude: 0.5, frequency: 1.37, phase: 2.1),
            Term(amplitude: 0.3, frequency: 2.71, phase: 4.0),
        ],
        [
            Term(amplitude: 0.8, frequency: 0.71, phase: 1.1), Term(amplitude: 0.45, frequency: 1.83, phase: 0.7),
            Term(amplitude: 0.25, frequency: 3.17, phase: 5.2),
        ],
        [Term(amplitude: 0.4, frequency: 0.37, phase: 2.9), Term(amplitude: 0.3, frequency: 1.13, phase: 3.3)],
    ])

    /// A rig that does not move.
    public static let still = HandMotion(axes: [[], [], []])

    init(axes: [[Term]]) { self.axes = axes }

    /// The angular velocity (rad/s, about x, y, z) at `t` seconds.
    public func angularVelocity(at t: Double) -> (x: Double, y: Double, z: Double) {
        func axis(_ terms: [Term]) -> Double {
            terms.reduce(0) { $0 + $1.amplitude * sin(2 * .pi * $1.frequency * t + $1.phase) }
        }
        return (axis(axes[0]), axis(axes[1]), axis(axes[2]))
    }

    /// The rotation (rad about x, y, z) the angular velocity integrates to at `t` seconds, each
    /// axis taken on its own (the small turns of a waved rig).
    public func rotation(at t: Double) -> (x: Double, y: Double, z: Double) {
        func axis(_ terms: [Term]) -> Double {
            terms.reduce(0) {
                let omega = 2 * .pi * $1.frequency
                return $0 - $1.amplitude / omega * cos(omega * t + $1.phase)
            }
        }
        return (axis(axes[0]), axis(axes[1]), axis(axes[2]))
    }
}

/// A textured wall a camera looks at while it turns: a deterministic pseudo-random texture (value
/// noise of three scales, no file), seen through a rotation as a pinhole camera sees it for small
/// turns: a turn about x or y shifts the image by the focal length times the angle, a turn about
/// the optical axis (z) rotates it about its centre. Enough for image alignment to recover the
/// turn between two frames, which is all a time-offset check needs of it.
///
/// Thread-safe (immutable).
public struct TexturedScene: Sendable {
    public let width: Int
    public let height: Int
    /// In pixels: a 60° horizontal field of view unless given.
    public let focalLength: Double

    private static let textureSide = 256
    /// The texture, `textureSide` squared, wrapping at its edges; values 16 to 235, as video luma.
    private static let sharedTexture: [Float] = makeTexture()
    /// The shared texture, taken when the scene is made: made then (once per process) rather
    /// than on the first frame a capture thread renders.
    private let texture: [Float]

    public init(width: Int, height: Int, focalLength: Double? = nil) {
        self.width = width
        self.height = height
        self.focalLength = focalLength ?? Self.nominalFocalLength(width: width)
        texture = Self.sharedTexture
    }

    /// The focal length (pixels) of a 60° horizontal field of view: the synthetic camera's, and what
    /// the offset check assumes of a camera whose session has no intrinsics.
    public static func nominalFocalLength(width: Int) -> Double { Double(width) / (2 * tan(Double.pi / 6)) }

    /// Draws the view at `rotation` as 8-bit grey, rows packed, into `pixels` (`width * height`).
    public func render(rotation: (x: Double, y: Double, z: Double), into pixels: UnsafeMutableRawBufferPointer) {
        precondition(pixels.count >= width * height)
        let cosine = cos(rotation.z), sine = sin(rotation.z)
        let shiftX = focalLength * rotation.y, shiftY = -focalLength * rotation.x
        let centreX = Double(width - 1) / 2, centreY = Double(height - 1) / 2
        let side = Self.textureSide
        texture.withUnsafeBufferPointer { texture in
            for row in 0..<height {
                let v = Double(row) - centreY
                // Along a row the texture coordinates step by (cos, sin) a pixel: added, not
                // multiplied, per pixel. A fixed offset keeps them positive for the wrap below.
                var x = cosine * -centreX - sine * v + shiftX + 4096
                var y = sine * -centreX + cosine * v + shiftY + 4096
                let line = row * width
                for column in 0..<width {
                    let x0 = Int(x), y0 = Int(y)
                    let fx = Float(x - Double(x0)), fy = Float(y - Double(y0))
                    let (xa, xb) = (x0 & (side - 1), (x0 + 1) & (side - 1))
                    let (ya, yb) = ((y0 & (side - 1)) * side, ((y0 + 1) & (side - 1)) * side)
                    let top = texture[ya + xa] + (texture[ya + xb] - texture[ya + xa]) * fx
                    let bottom = texture[yb + xa] + (texture[yb + xb] - texture[yb + xa]) * fx
                    pixels[line + column] = UInt8(top + (bottom - top) * fy + 0.5)
                    x += cosine
                    y += sine
                }
            }
        }
    }

    /// The view at `rotation`, as `render` draws it.
    public func image(rotation: (x: Double, y: Double, z: Double)) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height)
        pixels.withUnsafeMutableBytes { render(rotation: rotation, into: $0) }
        return pixels
    }

    private static func makeTexture() -> [Float] {
        let side = textureSide
        var texture = [Float](repeating: 0, count: side * side)
        // Lattice values from a fixed hash (SplitMix64's finaliser), smoothly interpolated: blobs
        // of 32, 8 and 4 pixels, so alignment has gradients at every pyramid level.
        func lattice(_ x: Int, _ y: Int, _ octave: Int) -> Float {
            var z = UInt64(truncatingIfNeeded: x &* 73_856_093 ^ y &* 19_349_663 ^ octave &* 83_492_791)
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            z ^= z >> 31
            return Float(z >> 40) / Float(1 << 24)
        }
        for (octave, (spacing, weight)) in [(32, Float(0.55)), (8, 0.3), (4, 0.15)].enumerated() {
            let cells = (side + spacing - 1) / spacing
            for y in 0..<side {
                for x in 0..<side {
                    let gx = Float(x) / Float(spacing), gy = Float(y) / Float(spacing)
                    let ix = Int(gx), iy = Int(gy)
                    // Smoothstep; each spacing divides the side, so the lattice wraps with the texture.
                    let sx = (gx - Float(ix)) * (gx - Float(ix)) * (3 - 2 * (gx - Float(ix)))
                    let sy = (gy - Float(iy)) * (gy - Float(iy)) * (3 - 2 * (gy - Float(iy)))
                    let x1 = (ix + 1) % cells, y1 = (iy + 1) % cells
                    let top = lattice(ix, iy, octave) + (lattice(x1, iy, octave) - lattice(ix, iy, octave)) * sx
                    let bottom = lattice(ix, y1, octave) + (lattice(x1, y1, octave) - lattice(ix, y1, octave)) * sx
                    texture[y * side + x] += weight * (top + (bottom - top) * sy)
                }
            }
        }
        return texture.map { 16 + 219 * $0 }
    }
}
