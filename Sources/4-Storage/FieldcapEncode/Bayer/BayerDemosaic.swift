import FieldcapCore

/// Demosaics an 8-bit Bayer mosaic bilinearly: each pixel keeps its own sample and takes each
/// missing colour as the mean of its neighbours that have it (OpenCV's default demosaic, and most
/// camera stacks'). At the picture's edges the mosaic is mirrored about its outer pixels, which
/// keeps each neighbour's colour.
///
/// Three outputs: RGB (the exports' colour images); luma alone (BT.601 full range, as JFIF's:
/// the exports' grey images); and the YUV planes a JPEG codes, that luma with chroma once per 2x2
/// block from the block's own red, blue and two greens, which is 4:2:0 sited at the block's
/// centre, as JPEG's is. Colour from a block's own samples needs no interpolation, and a
/// sensor's colour resolution is the block anyway; luma is where detail is.
///
/// Thread-bound by its caller (it writes into the buffers it is given).
public struct BayerDemosaic {
    public let pattern: BayerPattern
    public let width: Int
    public let height: Int

    /// Nil unless the mosaic is whole 2x2 blocks, at least 2x2.
    public init?(pattern: BayerPattern, width: Int, height: Int) {
        guard width >= 2, height >= 2, width % 2 == 0, height % 2 == 0 else { return nil }
        self.pattern = pattern
        self.width = width
        self.height = height
    }

    // 16-bit fixed point of BT.601's full-range matrix; each row of weights sums to 1 (or 0).
    private static let (yR, yG, yB) = (19595, 38470, 7471)
    private static let (uR, uG, uB) = (-11059, -21709, 32768)
    private static let (vR, vG, vB) = (32768, -27439, -5329)
    private static let half = 32768
    private static let offset128 = 128 << 16

    private static let (uR32, uG32, uB32) = (Int32(uR), Int32(uG), Int32(uB))
    private static let (vR32, vG32, vB32) = (Int32(vR), Int32(vG), Int32(vB))
    private static let chromaBias = Int32(offset128 + half)

    @inline(__always)
    private static func clamp(_ value: Int32) -> UInt8 { UInt8(truncatingIfNeeded: max(0, min(255, value))) }

    /// Writes the luma of every pixel into `luma` (`width` a row) and the chroma of every 2x2
    /// block into `u` and `v` (`width / 2` a row).
    func planes(
        from mosaic: UnsafePointer<UInt8>, luma: UnsafeMutablePointer<UInt8>, u: UnsafeMutablePointer<UInt8>,
        v: UnsafeMutablePointer<UInt8>
    ) {
        self.luma(from: mosaic, into: luma)
        chroma(from: mosaic, u: u, v: v)
    }

    /// Writes the luma of every pixel into `luma`, `width` a row.
    public func luma(from mosaic: UnsafePointer<UInt8>, into luma: UnsafeMutablePointer<UInt8>) {
        let last = width - 1
        for row in 0..<height {
            let rows = neighbourRows(row, of: mosaic)
            let out = luma + row * width
            // The edge columns through `colour`, which mirrors their missing neighbours.
            out[0] = Self.luma(colour(at: 0, rows))
            out[last] = Self.luma(colour(at: last, rows))
            // Inside, a pixel's luma is one weighted sum of its own sample, its two sides, its two
            // ends and its four corners, the weights fixed by its colour: no test per pixel.
            let even = LumaWeights(rows.even, redRow: rows.redRow)
            let odd = LumaWeights(rows.odd, redRow: rows.redRow)
            let (above, here, below) = (rows.above, rows.here, rows.below)
            // Two columns a turn, odd then even (the width is even), each with its own weights.
            var column = 1
            while column < last {
                out[column] = Self.luma(at: column, odd, above, here, below)
                if column + 1 < last { out[column + 1] = Self.luma(at: column + 1, even, above, here, below) }
                column += 2
            }
        }
    }

    /// One inside pixel's luma. Wrapping arithmetic: no sum can overflow (at most 255 * 4 * 2^16
    /// a term), and the checks would cost more than the sums.
    @inline(__always)
    private static func luma(
        at column: Int, _ weights: LumaWeights, _ above: UnsafePointer<UInt8>, _ here: UnsafePointer<UInt8>,
        _ below: UnsafePointer<UInt8>
    ) -> UInt8 {
        let sides = Int(here[column - 1]) &+ Int(here[column + 1])
        let ends = Int(above[column]) &+ Int(below[column])
        let corners =
            Int(above[column - 1]) &+ Int(above[column + 1]) &+ Int(below[column - 1]) &+ Int(below[column + 1])
        let sum =
            weights.centre &* Int(here[column]) &+ weights.sides &* sides &+ weights.ends &* ends
            &+ weights.corners &* corners
        return UInt8(truncatingIfNeeded: (sum &+ LumaWeights.half) &>> LumaWeights.shift)
    }

    @inline(__always)
    private static func luma(_ colour: (red: Int, green: Int, blue: Int)) -> UInt8 {
        UInt8(truncatingIfNeeded: (yR * colour.red + yG * colour.green + yB * colour.blue + half) >> 16)
    }

    /// BT.601's luma of a pixel's bilinear colour as weights on its own sample and its
    /// neighbours' sums, in 18-bit fixed point (the means' quarters and halves stay whole): a red
    /// pixel's green is its sides and ends over 4 and its blue its corners over 4, a green
    /// pixel's other two colours its sides over 2 and its ends over 2.
    struct LumaWeights {
        var centre: Int
        var sides: Int
        var ends: Int
        var corners: Int

        static let shift = 18
        static let half = 1 << 17

        init(_ colour: BayerPattern.Colour, redRow: Bool) {
            let (red, green, blue) = (BayerDemosaic.yR, BayerDemosaic.yG, BayerDemosaic.yB)
            switch colour {
            case .red: (centre, sides, ends, corners) = (4 * red, green, green, blue)
            case .blue: (centre, sides, ends, corners) = (4 * blue, green, green, red)
            case .green:
                (centre, corners) = (4 * green, 0)
                (sides, ends) = redRow ? (2 * red, 2 * blue) : (2 * blue, 2 * red)
            }
        }
    }

    private func chroma(
        from mosaic: UnsafePointer<UInt8>, u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>
    ) {
        // Where a block's red, blue and two greens lie, from its top-left pixel.
        var offsets: (red: Int, blue: Int, greens: [Int]) = (0, 0, [])
        for position in 0..<4 {
            let (row, column) = (position / 2, position % 2)
            switch pattern.colour(column: column, row: row) {
            case .red: offsets.red = row * width + column
            case .blue: offsets.blue = row * width + column
            case .green: offsets.greens.append(row * width + column)
            }
        }
        let (redOffset, blueOffset) = (offsets.red, offsets.blue)
        let (green1, green2) = (offsets.greens[0], offsets.greens[1])
        let pairs = width / 2
        for blockRow in 0..<(height / 2) {
            let top = mosaic + blockRow * 2 * width
            let (uRow, vRow) = (u + blockRow * pairs, v + blockRow * pairs)
            for block in 0..<pairs {
                let corner = top + block * 2
                let red = Int32(corner[redOffset]), blue = Int32(corner[blueOffset])
                // Two greens: their sum is twice a green, so its weight is halved. Wrapping
                // arithmetic, which cannot overflow here (at most 255 * 2^17), lets it vectorize.
                let greens = Int32(corner[green1]) &+ Int32(corner[green2])
                uRow[block] = Self.clamp(
                    (Self.uR32 &* red &+ (Self.uG32 &* greens) &>> 1 &+ Self.uB32 &* blue &+ Self.chromaBias) &>> 16)
                vRow[block] = Self.clamp(
                    (Self.vR32 &* red &+ (Self.vG32 &* greens) &>> 1 &+ Self.vB32 &* blue &+ Self.chromaBias) &>> 16)
            }
        }
    }

    /// Writes every pixel's bilinear colour into `rgb`, three bytes a pixel, `width` pixels a row.
    public func rgb(from mosaic: UnsafePointer<UInt8>, into rgb: UnsafeMutablePointer<UInt8>) {
        for row in 0..<height {
            let rows = neighbourRows(row, of: mosaic)
            let out = rgb + row * width * 3
            for column in 0..<width {
                let (red, green, blue) = colour(at: column, rows)
                out[column * 3] = UInt8(truncatingIfNeeded: red)
                out[column * 3 + 1] = UInt8(truncatingIfNeeded: green)
                out[column * 3 + 2] = UInt8(truncatingIfNeeded: blue)
            }
        }
    }

    /// A row of the mosaic with the rows above and below it (mirrored at the edges: row -1 is
    /// row 1, which keeps each neighbour's colour), and the colours of its even and odd columns.
    struct NeighbourRows {
        var above: UnsafePointer<UInt8>
        var here: UnsafePointer<UInt8>
        var below: UnsafePointer<UInt8>
        var even: BayerPattern.Colour
        var odd: BayerPattern.Colour
        var redRow: Bool
    }

    @inline(__always)
    private func neighbourRows(_ row: Int, of mosaic: UnsafePointer<UInt8>) -> NeighbourRows {
        let even = pattern.colour(column: 0, row: row)
        let odd = pattern.colour(column: 1, row: row)
        return NeighbourRows(
            above: mosaic + (row == 0 ? 1 : row - 1) * width, here: mosaic + row * width,
            below: mosaic + (row == height - 1 ? height - 2 : row + 1) * width, even: even, odd: odd,
            redRow: even == .red || odd == .red)
    }

    /// A pixel's colour: its own sample, and the means of its neighbours that have the others.
    /// A red or blue pixel's green is the mean of its four sides, its other colour that of its
    /// four corners; a green pixel's other two colours are the means of its two sides and of its
    /// two ends, whichever has each. Rounded to the nearest.
    @inline(__always)
    private func colour(at column: Int, _ rows: NeighbourRows) -> (Int, Int, Int) {
        let left = column == 0 ? 1 : column - 1
        let right = column == width - 1 ? width - 2 : column + 1
        let centre = Int(rows.here[column])
        let sides = Int(rows.here[left]) + Int(rows.here[right])
        let ends = Int(rows.above[column]) + Int(rows.below[column])
        let own = column & 1 == 0 ? rows.even : rows.odd
        switch own {
        case .red, .blue:
            let cross = (sides + ends + 2) >> 2
            let corners =
                (Int(rows.above[left]) + Int(rows.above[right]) + Int(rows.below[left]) + Int(rows.below[right]) + 2)
                >> 2
            return own == .red ? (centre, cross, corners) : (corners, cross, centre)
        case .green:
            let (alongRow, acrossRows) = ((sides + 1) >> 1, (ends + 1) >> 1)
            return rows.redRow ? (alongRow, centre, acrossRows) : (acrossRows, centre, alongRow)
        }
    }
}
