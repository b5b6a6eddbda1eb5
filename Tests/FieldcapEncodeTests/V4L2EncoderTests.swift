import FieldcapCore
import Testing

@testable import FieldcapEncode

/// The parts of the V4L2 encoder that need no device: packing a frame into a driver's buffer
/// layout, and what the Matroska track says of FWHT. The encoder itself is tested against the
/// kernel's vicodec in the rig (Tests/KernelRig/tests/fieldcap_encode_vicodec.sh).
@Suite("V4L2 encoder: buffer packing and track header")
struct V4L2EncoderTests {
    /// A frame whose every byte says where it came from.
    private func frame(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 * 7 + $0 / 251) } }

    @Test("an NV12 frame goes into longer lines a line at a time: luma, then chroma at the same stride")
    func packsNV12IntoLongerLines() throws {
        let format = VideoFormat(width: 6, height: 4, pixelFormat: .nv12)
        let source = frame(6 * 4 * 3 / 2)
        let packing = try #require(PlanePacking(format, bytesPerLine: 8, sizeImage: 8 * 6))
        var buffer = [UInt8](repeating: 0xEE, count: 8 * 6)
        source.withUnsafeBytes { bytes in buffer.withUnsafeMutableBytes { packing.pack(bytes, into: $0.baseAddress!) } }
        for line in 0..<6 {
            #expect(Array(buffer[line * 8..<line * 8 + 6]) == Array(source[line * 6..<line * 6 + 6]), "line \(line)")
            #expect(buffer[line * 8 + 6..<line * 8 + 8].allSatisfy { $0 == 0xEE }, "line \(line)'s padding")
        }
    }

    @Test("a frame whose lines the driver takes as they are is copied whole")
    func copiesTightFramesWhole() throws {
        let format = VideoFormat(width: 8, height: 2, pixelFormat: .yuyv)
        let source = frame(8 * 2 * 2)
        let packing = try #require(PlanePacking(format, bytesPerLine: 16, sizeImage: 32))
        var buffer = [UInt8](repeating: 0, count: 32)
        source.withUnsafeBytes { bytes in buffer.withUnsafeMutableBytes { packing.pack(bytes, into: $0.baseAddress!) } }
        #expect(buffer == source)
    }

    @Test(
        """
        a picture the encoder aligns larger (1080 lines into 1088): the frame top-left, its \
        last pixel and line repeated into the padding, NV12's chroma after the padded luma
        """
    )
    func padsIntoAnAlignedPicture() throws {
        // 6x4 NV12 into an 8x6 picture at a 10-byte stride.
        let format = VideoFormat(width: 6, height: 4, pixelFormat: .nv12)
        let source = frame(6 * 4 * 3 / 2)
        let packing = try #require(
            PlanePacking(format, bytesPerLine: 10, sizeImage: 10 * 9, codedWidth: 8, codedHeight: 6))
        #expect(!packing.isContiguous, "a padded layout is never read in place")
        var buffer = [UInt8](repeating: 0xEE, count: 10 * 9)
        source.withUnsafeBytes { bytes in buffer.withUnsafeMutableBytes { packing.pack(bytes, into: $0.baseAddress!) } }
        func line(_ index: Int) -> [UInt8] { Array(buffer[index * 10..<index * 10 + 8]) }
        for row in 0..<4 {
            let luma = Array(source[row * 6..<row * 6 + 6])
            #expect(line(row) == luma + [luma[5], luma[5]], "luma line \(row): its last pixel repeated")
        }
        #expect(line(4) == line(3) && line(5) == line(3), "the last luma line repeated below")
        // Chroma starts after the 6 coded luma lines; its pairs (U, V) repeat as pairs.
        for row in 0..<2 {
            let chroma = Array(source[24 + row * 6..<24 + row * 6 + 6])
            #expect(line(6 + row) == chroma + [chroma[4], chroma[5]], "chroma line \(row)")
        }
        #expect(line(8) == line(7), "the last chroma line repeated below")
        #expect(buffer[8..<10].allSatisfy { $0 == 0xEE }, "the stride's own padding is not picture")

        // A Bayer mosaic repeats its last two columns and rows, keeping its colours in place.
        let mosaic = VideoFormat(width: 4, height: 2, pixelFormat: .bayerRGGB)
        let bayer = try #require(PlanePacking(mosaic, bytesPerLine: 8, sizeImage: 8 * 5, codedWidth: 8, codedHeight: 5))
        let pixels: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        var padded = [UInt8](repeating: 0, count: 8 * 5)
        pixels.withUnsafeBytes { bytes in padded.withUnsafeMutableBytes { bayer.pack(bytes, into: $0.baseAddress!) } }
        #expect(Array(padded[0..<8]) == [1, 2, 3, 4, 3, 4, 3, 4])
        #expect(Array(padded[8..<16]) == [5, 6, 7, 8, 7, 8, 7, 8])
        #expect(Array(padded[16..<24]) == Array(padded[0..<8]) && Array(padded[24..<32]) == Array(padded[8..<16]))
        #expect(Array(padded[32..<40]) == Array(padded[0..<8]))
        // A picture smaller than the frame cannot hold it.
        #expect(PlanePacking(format, bytesPerLine: 10, sizeImage: 200, codedWidth: 4, codedHeight: 6) == nil)
    }

    @Test("a driver layout that cannot hold the frame is refused, not misfed")
    func refusesLayoutsTooSmall() {
        let format = VideoFormat(width: 8, height: 4, pixelFormat: .grey)
        #expect(PlanePacking(format, bytesPerLine: 6, sizeImage: 64) == nil)
        #expect(PlanePacking(format, bytesPerLine: 8, sizeImage: 31) == nil)
        #expect(
            PlanePacking(VideoFormat(width: 8, height: 4, pixelFormat: .mjpeg), bytesPerLine: 8, sizeImage: 64) == nil)
    }

    @Test("FWHT's track header is a 40-byte BITMAPINFOHEADER naming the fourcc and the size")
    func fwhtCodecPrivate() {
        let header = V4L2Encoder.bitmapInfoHeader(.fwht, VideoFormat(width: 640, height: 480, pixelFormat: .fwht))
        func u32(_ at: Int) -> UInt32 { header[at..<at + 4].reversed().reduce(0) { $0 << 8 | UInt32($1) } }
        #expect(header.count == 40)
        #expect(u32(0) == 40 && u32(4) == 640 && u32(8) == 480)
        #expect(Array(header[16..<20]) == Array("FWHT".utf8))
    }

    @Test("an FWHT frame is a keyframe when its header says I-frame, whatever the driver flagged")
    func fwhtKeyframes() throws {
        let framing = FWHTFraming(codecPrivate: [])
        func header(flags: UInt32) -> [UInt8] {
            [0x4F, 0x4F, 0x4F, 0x4F, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 3, 0, 0, 2, 0x80, 0, 0, 1, 0xE0]
                + (0..<4).map { UInt8(truncatingIfNeeded: flags >> (24 - 8 * $0)) } + [0, 0, 0, 0]
        }
        let iFrame = try header(flags: 0xA0480).withUnsafeBytes { try framing.frame($0, keyframe: false) }
        let pFrame = try header(flags: 0xA0080).withUnsafeBytes { try framing.frame($0, keyframe: true) }
        #expect(iFrame?.isKeyframe == true && pFrame?.isKeyframe == false)
        #expect(throws: BitstreamError.self) {
            try [UInt8](repeating: 0, count: 10).withUnsafeBytes { try framing.frame($0, keyframe: true) }
        }
    }

    @Test("a frame's sequence number survives the trip through a buffer timestamp")
    func sequenceStamps() {
        for sequence in [0, 1, 999_999, 1_000_000, 123_456_789] {
            #expect(V4L2Encoder.sequence(of: V4L2Encoder.stamp(sequence)) == sequence)
        }
    }
}
