import FieldcapCore
import Testing

@testable import FieldcapEncode

/// FFV1 through libavcodec: every captured format decodes back to its bytes exactly. (That FFmpeg
/// and GStreamer decode the recorded files to the raw camera's bytes is the CLI tests' part:
/// Tests/FieldcapCLITests/EncodeCommandTests.swift.)
@Suite("FFV1 encoder and decoder")
struct FFV1Tests {
    /// Frames of noise (a random walk, every seventh byte random): every sample value and bit
    /// appears, and noise need not compress (the CLI tests hold a camera's picture to that).
    static func frames(_ format: VideoFormat, count: Int) -> [[UInt8]] {
        var generator = SystemRandomNumberGenerator()
        let bytes = format.pixelFormat.frameBytes(width: format.width, height: format.height)!
        return (0..<count).map { index in
            var value = UInt8(truncatingIfNeeded: index * 37)
            return (0..<bytes).map { offset in
                value &+= UInt8.random(in: 0...6, using: &generator) &- 3
                return offset % 7 == 0 ? UInt8.random(in: 0...255, using: &generator) : value
            }
        }
    }

    @Test(
        "YUYV, NV12, GREY, Bayer, Y16 and Z16 frames encode and decode back bit-exact, in order, each with its record",
        arguments: [
            VideoFormat(width: 64, height: 48, pixelFormat: .yuyv),
            VideoFormat(width: 64, height: 48, pixelFormat: .nv12),
            VideoFormat(width: 63, height: 47, pixelFormat: .grey),
            VideoFormat(width: 64, height: 48, pixelFormat: .bayerGRBG),
            VideoFormat(width: 40, height: 30, pixelFormat: .y16),
            VideoFormat(width: 40, height: 30, pixelFormat: .z16),
        ])
    func roundTrip(format: VideoFormat) throws {
        let encoder = try FFV1Encoder(format: format)
        #expect(encoder.encodedFormat.pixelFormat == .ffv1)
        #expect(!encoder.codecPrivate.isEmpty, "FFV1 version 3 keeps its configuration in the track")
        let originals = Self.frames(format, count: 5)
        var coded: [(sequence: UInt64, bytes: [UInt8])] = []
        let keep = { (frame: EncodedFrame) in coded.append((frame.record.sequence, Array(frame.bytes))) }
        for (index, frame) in originals.enumerated() {
            var record = CaptureRecord()
            record.sequence = UInt64(100 + index)
            try frame.withUnsafeBytes { try encoder.encode($0, record: record, emit: keep) }
        }
        try encoder.drain(emit: keep)
        #expect(coded.map(\.sequence) == [100, 101, 102, 103, 104])
        let decoder = try FFV1Decoder(format: format, codecPrivate: encoder.codecPrivate)
        for (index, frame) in coded.enumerated() {
            let decoded = try frame.bytes.withUnsafeBytes { try decoder.decode($0) }
            #expect(decoded == originals[index], "frame \(index) of \(format) is not bit-exact")
        }
    }

    @Test("a decoder given another format's frames refuses them rather than unpack the wrong planes")
    func wrongFormat() throws {
        let yuyv = VideoFormat(width: 32, height: 16, pixelFormat: .yuyv)
        let encoder = try FFV1Encoder(format: yuyv)
        var coded: [UInt8] = []
        try Self.frames(yuyv, count: 1)[0].withUnsafeBytes {
            try encoder.encode($0, record: CaptureRecord()) { coded = Array($0.bytes) }
        }
        let grey = try FFV1Decoder(
            format: VideoFormat(width: 32, height: 16, pixelFormat: .grey), codecPrivate: encoder.codecPrivate)
        #expect(throws: EncodeError.self) { try coded.withUnsafeBytes { try grey.decode($0) } }
    }

    @Test("what FFV1 cannot take is refused with the reason: an MJPEG camera, odd chroma sizes")
    func refused() {
        let mjpeg = VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg)
        #expect(VideoEncoders.problem(.ffv1, for: mjpeg)?.contains("sends MJPEG") == true)
        #expect(
            FFV1Encoder.problem(with: VideoFormat(width: 63, height: 48, pixelFormat: .yuyv))?.contains("odd width")
                == true)
        #expect(
            FFV1Encoder.problem(with: VideoFormat(width: 64, height: 47, pixelFormat: .nv12))?.contains("odd height")
                == true)
        #expect(FFV1Encoder.problem(with: VideoFormat(width: 63, height: 47, pixelFormat: .grey)) == nil)
        #expect(VideoEncoders.problem(.ffv1, for: VideoFormat(width: 64, height: 48, pixelFormat: .z16)) == nil)
    }
}
