import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapEncode

@Suite("JPEG encoder")
struct JPEGEncoderTests {
    static let width = 64, height = 48

    /// A frame with smooth ramps in every plane (JPEG keeps those within a few levels).
    static func frame(_ format: VideoFormat.PixelFormat) -> [UInt8] {
        let width = Self.width, height = Self.height
        func luma(_ x: Int, _ y: Int) -> UInt8 { UInt8(32 + (x * 2 + y * 2) % 190) }
        func cb(_ x: Int, _ y: Int) -> UInt8 { UInt8(64 + (x * 3) % 128) }
        func cr(_ x: Int, _ y: Int) -> UInt8 { UInt8(64 + (y * 3) % 128) }
        var bytes: [UInt8] = []
        switch format {
        case .yuyv:
            for y in 0..<height {
                for pair in 0..<(width / 2) {
                    bytes += [luma(pair * 2, y), cb(pair * 2, y), luma(pair * 2 + 1, y), cr(pair * 2, y)]
                }
            }
        case .nv12:
            for y in 0..<height { for x in 0..<width { bytes.append(luma(x, y)) } }
            for y in 0..<(height / 2) { for x in 0..<(width / 2) { bytes += [cb(x * 2, y * 2), cr(x * 2, y * 2)] } }
        case .grey:
            for y in 0..<height { for x in 0..<width { bytes.append(luma(x, y)) } }
        default: break
        }
        return bytes
    }

    /// The frame's planes as FFmpeg's planar formats lay them out: Y, then Cb, then Cr.
    static func planes(_ format: VideoFormat.PixelFormat, _ frame: [UInt8]) -> [UInt8] {
        switch format {
        case .yuyv:
            let y = stride(from: 0, to: frame.count, by: 2).map { frame[$0] }
            let u = stride(from: 1, to: frame.count, by: 4).map { frame[$0] }
            let v = stride(from: 3, to: frame.count, by: 4).map { frame[$0] }
            return y + u + v
        case .nv12:
            let lumaBytes = width * height
            let chroma = Array(frame[lumaBytes...])
            return Array(frame[..<lumaBytes]) + stride(from: 0, to: chroma.count, by: 2).map { chroma[$0] }
                + stride(from: 1, to: chroma.count, by: 2).map { chroma[$0] }
        default:
            return frame
        }
    }

    @Test(
        "YUYV, NV12 and GREY become JPEGs that FFmpeg decodes to the same planes, within JPEG's loss",
        arguments: [
            (VideoFormat.PixelFormat.yuyv, "yuvj422p"), (.nv12, "yuvj420p"), (.grey, "gray"),
        ])
    func roundTrip(format: VideoFormat.PixelFormat, ffmpegFormat: String) throws {
        let encoder = try JPEGEncoder(format: VideoFormat(width: Self.width, height: Self.height, pixelFormat: format))
        let frame = Self.frame(format)
        let jpeg = try frame.withUnsafeBytes { try encoder.encode($0) }
        let path = NSTemporaryDirectory() + "/preview-\(UUID().uuidString).jpg"
        let decoded = path + ".raw"
        defer {
            try? FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: decoded)
        }
        try Data(jpeg).write(to: URL(fileURLWithPath: path))
        let probe = try runTool(
            "ffprobe", ["-v", "error", "-show_entries", "stream=width,height,pix_fmt", "-of", "csv=p=0", path])
        #expect(
            probe.output.trimmingCharacters(in: .whitespacesAndNewlines)
                == "\(Self.width),\(Self.height),\(ffmpegFormat)")
        // Decoded to the same planar layout, no range or colour conversion.
        let convert = try runTool(
            "ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", ffmpegFormat, "-y", decoded])
        #expect(convert.status == 0, "\(convert.output)")
        let back = [UInt8](try Data(contentsOf: URL(fileURLWithPath: decoded)))
        let expected = Self.planes(format, frame)
        try #require(back.count == expected.count)
        let meanError = zip(back, expected).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(back.count)
        #expect(meanError < 2.5, "mean error \(meanError) levels")
    }

    @Test("MJPEG frames pass as they are; Y16 has no preview, and says which formats have")
    func passAndRefuse() throws {
        let encoder = try JPEGEncoder(format: VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg))
        let bytes: [UInt8] = [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9]
        #expect(try bytes.withUnsafeBytes { try encoder.encode($0) } == bytes)
        #expect(throws: EncodeError.self) {
            try JPEGEncoder(format: VideoFormat(width: 64, height: 48, pixelFormat: .y16))
        }
        #expect(
            JPEGEncoder.problem(with: VideoFormat(width: 64, height: 48, pixelFormat: .y16))?.contains("YUYV") == true)
        // A frame shorter than its format says is an error, not a read past its end.
        let yuyv = try JPEGEncoder(format: VideoFormat(width: 64, height: 48, pixelFormat: .yuyv))
        let short = [UInt8](repeating: 0, count: 100)
        #expect(throws: EncodeError.self) { try short.withUnsafeBytes { try yuyv.encode($0) } }
    }
}
