import CTurboJPEG
import FieldcapCore
import Testing

@testable import FieldcapEncode

/// The Bayer demosaic, held to what a mosaic means: each pattern puts its colours where its name
/// says, a picture of one colour comes back as that colour everywhere (edges included), a colour
/// ramp comes back exactly where bilinear interpolation is exact, and the JPEG path's planes are
/// BT.601's luma and chroma of those colours. (That the whole picture matches OpenCV's own
/// demosaic is the CLI tests' part, judged in Python: Tests/FieldcapCLITests/Clients.)
@Suite("Bayer demosaic")
struct BayerDemosaicTests {
    /// A mosaic of `pattern` sampled from `colour(x, y)`.
    static func mosaic(
        _ pattern: BayerPattern, width: Int, height: Int, _ colour: (Int, Int) -> (Int, Int, Int)
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = colour(x, y)
                let sample =
                    switch pattern.colour(column: x, row: y) {
                    case .red: r
                    case .green: g
                    case .blue: b
                    }
                bytes.append(UInt8(sample))
            }
        }
        return bytes
    }

    static func rgb(_ demosaic: BayerDemosaic, _ mosaic: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: demosaic.width * demosaic.height * 3)
        mosaic.withUnsafeBufferPointer { source in
            out.withUnsafeMutableBufferPointer { demosaic.rgb(from: source.baseAddress!, into: $0.baseAddress!) }
        }
        return out
    }

    @Test("each pattern's name is its top-left block, left to right, top to bottom")
    func patternNames() {
        func block(_ pattern: BayerPattern) -> String {
            [(0, 0), (1, 0), (0, 1), (1, 1)].map { column, row in
                switch pattern.colour(column: column, row: row) {
                case .red: "r"
                case .green: "g"
                case .blue: "b"
                }
            }.joined()
        }
        for pattern in BayerPattern.allCases { #expect(block(pattern) == pattern.rawValue) }
        // The block repeats.
        #expect(BayerPattern.grbg.colour(column: 5, row: 2) == .red)
        #expect(BayerPattern.grbg.colour(column: 4, row: 3) == .blue)
        #expect(VideoFormat.PixelFormat.bayerBGGR.rawValue == "BA81")
        #expect(VideoFormat.PixelFormat.named("bggr") == .bayerBGGR)
        #expect(VideoFormat.PixelFormat.named("SRGGB8") == .bayerRGGB)
        #expect(VideoFormat.PixelFormat.named("GBRG") == .bayerGBRG)
        #expect(VideoFormat.PixelFormat.named("mjpeg") == .mjpeg)
        #expect(VideoFormat.PixelFormat.named("BGRG") == nil)
    }

    @Test(
        "a picture of one colour demosaics to that colour at every pixel, edges included",
        arguments: BayerPattern.allCases)
    func flatColour(pattern: BayerPattern) throws {
        let (width, height) = (10, 6)
        let demosaic = try #require(BayerDemosaic(pattern: pattern, width: width, height: height))
        let colour = (200, 90, 30)
        let out = Self.rgb(demosaic, Self.mosaic(pattern, width: width, height: height) { _, _ in colour })
        for pixel in 0..<(width * height) {
            #expect(
                (Int(out[pixel * 3]), Int(out[pixel * 3 + 1]), Int(out[pixel * 3 + 2])) == colour,
                "pixel \(pixel) of \(pattern)")
        }
    }

    @Test(
        """
        a linear ramp in each colour comes back exactly inside the picture, \
        where the mean of two or four neighbours is the ramp's value
        """,
        arguments: BayerPattern.allCases)
    func ramps(pattern: BayerPattern) throws {
        let (width, height) = (16, 12)
        let demosaic = try #require(BayerDemosaic(pattern: pattern, width: width, height: height))
        let colour = { (x: Int, y: Int) in (10 + 4 * x, 20 + 6 * y, 30 + 2 * x + 2 * y) }
        let out = Self.rgb(demosaic, Self.mosaic(pattern, width: width, height: height, colour))
        for y in 1..<(height - 1) {
            for x in 1..<(width - 1) {
                let pixel = (y * width + x) * 3
                let (r, g, b) = colour(x, y)
                #expect([Int(out[pixel]), Int(out[pixel + 1]), Int(out[pixel + 2])] == [r, g, b], "(\(x), \(y))")
            }
        }
    }

    @Test("the JPEG path's planes: luma per pixel and chroma per 2x2 block, by BT.601's full-range equations")
    func planes() throws {
        let format = VideoFormat(width: 8, height: 4, pixelFormat: .bayerRGGB)
        let planes = try #require(YUVPlanes(format: format))
        #expect(planes.subsampling == TJSAMP_420)
        // Left half one colour, right half another: each 2x2 block lies within one.
        let colours = [(255, 0, 0), (40, 160, 220)]
        let mosaic = Self.mosaic(.rggb, width: 8, height: 4) { x, _ in colours[x / 4] }
        let split = try #require(mosaic.withUnsafeBytes { planes.split($0) })
        #expect(split.strides == [8, 4, 4])
        func value(_ plane: Int, _ index: Int) -> Int { Int(split.planes[plane]![index]) }
        for (half, (r, g, b)) in colours.enumerated() {
            let (r, g, b) = (Double(r), Double(g), Double(b))
            let y = 0.299 * r + 0.587 * g + 0.114 * b
            let u = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
            let v = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
            // Away from the boundary between the halves, where luma is interpolated across it.
            let column = half == 0 ? 1 : 6
            #expect(abs(value(0, 8 + column) - Int(y.rounded())) <= 1, "luma of half \(half)")
            for block in [half * 2, half * 2 + 1, 4 + half * 2] {
                #expect(abs(value(1, block) - Int(min(255, u).rounded())) <= 1, "Cb of block \(block)")
                #expect(abs(value(2, block) - Int(min(255, v).rounded())) <= 1, "Cr of block \(block)")
            }
        }
    }

    @Test("a mosaic that is not whole 2x2 blocks is refused with the reason")
    func oddSizes() {
        #expect(BayerDemosaic(pattern: .bggr, width: 9, height: 6) == nil)
        #expect(BayerDemosaic(pattern: .bggr, width: 8, height: 5) == nil)
        let odd = VideoFormat(width: 8, height: 5, pixelFormat: .bayerBGGR)
        #expect(YUVPlanes.problem(with: odd)?.contains("2x2") == true)
        #expect(VideoEncoders.problem(.jpeg(quality: 85), for: odd)?.contains("2x2") == true)
        #expect(
            VideoEncoders.problem(.jpeg(quality: 85), for: VideoFormat(width: 8, height: 6, pixelFormat: .bayerBGGR))
                == nil)
    }
}
