import FieldcapCore
import FieldcapEncode
import Foundation
import TestSupport
import Testing

@testable import FieldcapFaces

/// Coded cameras covered as their videos store them: decoded, covered, written again the same
/// way; judged by decoding what came back with the codec's own decoder.
@Suite("Covering the faces of frames as a video stores them")
struct StoredFrameCoverTests {
    static let box = FaceBox(x: 40, y: 30, width: 24, height: 24, score: 0.99)

    /// A picture with gradients, edges and a fine texture a pixelation removes, rows packed.
    static func picture(width: Int, height: Int, channels: Int, seed: Int) -> [UInt8] {
        var pixels = [UInt8](repeating: 0, count: width * height * channels)
        for y in 0..<height {
            for x in 0..<width {
                for channel in 0..<channels {
                    pixels[(y * width + x) * channels + channel] = UInt8(
                        (x * (3 + channel) + y * 2 + seed * 7 + (x / 8 + y / 8) % 2 * 40 + (x * 7 + y * 13) % 5 * 12)
                            & 0xFF)
                }
            }
        }
        return pixels
    }

    /// Everything `cover` gives back for `frames`, flushed.
    static func covered(
        _ frames: [[UInt8]], by cover: StoredFrameCover
    ) throws -> [(
        bytes: [UInt8], covered: [FaceBox]
    )] {
        var settled: [(bytes: [UInt8], covered: [FaceBox])] = []
        for frame in frames { settled += try cover.push(frame) }
        return settled + (try cover.flush())
    }

    /// Whether pixel (x, y) lies outside every box, widened by `margin`.
    static func outside(_ x: Int, _ y: Int, _ boxes: [FaceBox], margin: Int) -> Bool {
        boxes.allSatisfy { box in
            x < Int(box.x) - margin || x >= Int(box.x + box.width) + margin || y < Int(box.y) - margin
                || y >= Int(box.y + box.height) + margin
        }
    }

    @Test(
        "FFV1: covered frames decode to the captured bytes outside the boxes, bit for bit, with the new track's record")
    func ffv1() throws {
        let captured = VideoFormat(width: 128, height: 96, pixelFormat: .grey)
        let encoder = try FFV1Encoder(format: captured)
        let originals = (0..<4).map { Self.picture(width: 128, height: 96, channels: 1, seed: $0) }
        var stored: [[UInt8]] = []
        for frame in originals {
            try frame.withUnsafeBytes { picture in
                try encoder.encode(picture, record: CaptureRecord()) { stored.append(Array($0.bytes)) }
            }
        }
        // The record given afterwards, as extract gives each part's.
        let cover = try StoredFrameCover(
            stored: VideoFormat(width: 128, height: 96, pixelFormat: .ffv1), captured: .grey, settings: .init(),
            detector: ScriptedDetector { _ in [Self.box] })
        try cover.decode(with: encoder.codecPrivate)
        let frames = try Self.covered(stored, by: cover)
        #expect(frames.count == 4 && !cover.codecPrivate.isEmpty)
        let decoder = try FFV1Decoder(format: captured, codecPrivate: cover.codecPrivate)
        for (index, frame) in frames.enumerated() {
            let decoded = try frame.bytes.withUnsafeBytes { try decoder.decode($0) }
            #expect(frame.covered.count == 1)
            var changed = 0
            for y in 0..<96 {
                for x in 0..<128 {
                    if Self.outside(x, y, frame.covered, margin: 0) {
                        #expect(decoded[y * 128 + x] == originals[index][y * 128 + x], "(\(x), \(y))")
                    } else if decoded[y * 128 + x] != originals[index][y * 128 + x] {
                        changed += 1
                    }
                }
            }
            #expect(changed > 24 * 24 / 2, "frame \(index): only \(changed) pixels covered")
        }
        #expect(cover.report.frames == 4 && cover.report.framesCovered == 4 && cover.report.recodedJPEGQuality == nil)
    }

    @Test(
        "MJPEG: covered frames are JPEGs of the recorded size and subsampling again, the box uniform blocks, over 40 dB outside it",
        arguments: [VideoFormat.PixelFormat.yuyv, .nv12])
    func mjpeg(captured: VideoFormat.PixelFormat) throws {
        // As a camera (or encode=jpeg) makes them: YUYV as 4:2:2, NV12 as 4:2:0.
        let format = VideoFormat(width: 128, height: 96, pixelFormat: captured)
        let encoder = try JPEGEncoder(format: format, quality: 90, fastDCT: false)
        let rows = captured == .yuyv ? 96 : 144
        let columns = captured == .yuyv ? 256 : 128
        let stored = try (0..<3).map { seed in
            try Self.picture(width: columns, height: rows, channels: 1, seed: seed).withUnsafeBytes {
                try encoder.encode($0)
            }
        }
        let decoder = try JPEGDecoder()
        let recorded = try stored.map { frame in try frame.withUnsafeBytes { try decoder.decode($0, to: .rgb8).bytes } }
        let cover = try StoredFrameCover(
            stored: VideoFormat(width: 128, height: 96, pixelFormat: .mjpeg), settings: .init(),
            detector: ScriptedDetector { _ in [Self.box] })
        let frames = try Self.covered(stored, by: cover)
        #expect(frames.count == 3 && cover.codecPrivate.isEmpty && cover.report.recodedJPEGQuality == 95)
        for (index, frame) in frames.enumerated() {
            let planes = try frame.bytes.withUnsafeBytes { try decoder.decodePlanes($0, size: (128, 96)) }
            #expect(planes.subsampling == (captured == .yuyv ? .yuv422 : .yuv420))
            let decoded = try frame.bytes.withUnsafeBytes { try decoder.decode($0, to: .rgb8, size: (128, 96)) }
            var error = 0.0, count = 0
            // A JPEG's blocks across a box's edge are coded again whole.
            for y in 0..<96 {
                for x in 0..<128 where Self.outside(x, y, frame.covered, margin: 16) {
                    for channel in 0..<3 {
                        let at = (y * 128 + x) * 3 + channel
                        let difference = Double(decoded.bytes[at]) - Double(recorded[index][at])
                        error += difference * difference
                        count += 1
                    }
                }
            }
            let psnr = 10 * log10(255 * 255 / max(error / Double(count), 1e-9))
            #expect(psnr > 40, "frame \(index): \(psnr) dB outside the boxes")
            // Inside: the picture's texture is gone (a block's mean, give or take the JPEG).
            let box = frame.covered[0]
            let row = Int(box.y) + 2
            let was = try stored[index].withUnsafeBytes { try decoder.decodePlanes($0, size: (128, 96)) }
            let before = (Int(box.x)..<Int(box.x) + 4).map { was.bytes[row * 128 + $0] }
            let values = (Int(box.x)..<Int(box.x) + 4).map { planes.bytes[row * 128 + $0] }
            #expect(before.max()! - before.min()! >= 20, "frame \(index): \(before) recorded: no texture to cover")
            #expect(values.max()! - values.min()! <= 10, "frame \(index): \(values) inside a block")
        }
    }

    @Test(
        """
        MJPEG of every subsampling at odd sizes: planes padded as libjpeg-turbo lays them out, the \
        same subsampling written again, over 40 dB outside the box; a frame sampled otherwise refused
        """,
        arguments: JPEGSubsampling.allCases)
    func mjpegPlanes(subsampling: JPEGSubsampling) throws {
        for (width, height) in [(35, 35), (37, 29), (64, 48)] {
            let planes = subsampling.planes(width: width, height: height)
            let encoder = try YUVPlanesJPEGEncoder(width: width, height: height, quality: 90)
            let stored = try (0..<2).map { seed in
                try encoder.encode(
                    Self.picture(width: planes.bytes, height: 1, channels: 1, seed: seed), subsampling: subsampling)
            }
            let decoder = try JPEGDecoder()
            let recorded = try stored.map { frame in
                try frame.withUnsafeBytes { try decoder.decodePlanes($0, size: (width, height)) }
            }
            #expect(recorded.allSatisfy { $0.subsampling == subsampling && $0.bytes.count == planes.bytes })
            // A face at the right and bottom edges: the cover reaches the padding.
            let edge = FaceBox(x: Double(width - 14), y: Double(height - 14), width: 14, height: 14, score: 0.9)
            let cover = try StoredFrameCover(
                stored: VideoFormat(width: width, height: height, pixelFormat: .mjpeg), settings: .init(),
                detector: ScriptedDetector { _ in [edge] })
            let frames = try Self.covered(stored, by: cover)
            #expect(frames.count == 2, "\(width)x\(height)")
            for (index, frame) in frames.enumerated() {
                let again = try frame.bytes.withUnsafeBytes { try decoder.decodePlanes($0, size: (width, height)) }
                #expect(again.subsampling == subsampling && again.bytes.count == planes.bytes)
                var error = 0.0, count = 0
                for y in 0..<height {
                    for x in 0..<width where Self.outside(x, y, frame.covered, margin: 16) {
                        let difference =
                            Double(again.bytes[y * planes.lumaWidth + x])
                            - Double(recorded[index].bytes[y * planes.lumaWidth + x])
                        error += difference * difference
                        count += 1
                    }
                }
                if count > 0 {
                    let psnr = 10 * log10(255 * 255 / max(error / Double(count), 1e-9))
                    #expect(psnr > 40, "\(subsampling) \(width)x\(height) frame \(index): \(psnr) dB")
                }
            }
        }
        // Another subsampling mid-stream: refused, and not as damage.
        guard let other = JPEGSubsampling.allCases.first(where: { $0 != subsampling }) else { return }
        let first = try YUVPlanesJPEGEncoder(width: 32, height: 32, quality: 90).encode(
            [UInt8](repeating: 128, count: subsampling.planes(width: 32, height: 32).bytes), subsampling: subsampling)
        let second = try YUVPlanesJPEGEncoder(width: 32, height: 32, quality: 90).encode(
            [UInt8](repeating: 128, count: other.planes(width: 32, height: 32).bytes), subsampling: other)
        let cover = try StoredFrameCover(
            stored: VideoFormat(width: 32, height: 32, pixelFormat: .mjpeg), settings: .init(),
            detector: ScriptedDetector { _ in [] })
        _ = try cover.push(first)
        do {
            _ = try cover.push(second)
            Issue.record("\(other) after \(subsampling) was covered")
        } catch {
            #expect(!error.damagedFrame && error.description.contains("sampled"), "\(error)")
        }
    }

    @Test("the luma plane's padding past the picture is made copies of its last column and row")
    func lumaPadding() {
        let layout = FrameLayout(jpegPlanes: .yuv420, width: 5, height: 3)
        // Luma 6x4, then two chroma planes of 3x2.
        var planes = (0..<layout.byteCount).map { UInt8($0) }
        let chroma = Array(planes[24...])
        StoredFrameCover.fillLumaPadding(&planes, layout: layout)
        for row in 0..<3 {
            #expect(planes[row * 6 + 5] == UInt8(row * 6 + 4), "row \(row)")
            #expect(Array(planes[(row * 6)..<(row * 6 + 5)]) == (0..<5).map { UInt8(row * 6 + $0) })
        }
        #expect(Array(planes[18..<24]) == Array(planes[12..<18]))
        #expect(Array(planes[24...]) == chroma)
    }

    @Test("a frame that does not decode is a damaged frame; coded-across-frames and unnamed FFV1 are refused")
    func refusals() throws {
        let cover = try StoredFrameCover(
            stored: VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg), settings: .init(),
            detector: ScriptedDetector { _ in [] })
        do {
            _ = try cover.push([0xFF, 0xD8, 1, 2, 3])
            Issue.record("a damaged JPEG was covered")
        } catch {
            #expect(error.damagedFrame, "\(error)")
        }
        // A raw frame short of its layout is damage too.
        let raw = try StoredFrameCover(
            stored: VideoFormat(width: 64, height: 48, pixelFormat: .grey), settings: .init(),
            detector: ScriptedDetector { _ in [] })
        do {
            _ = try raw.push([UInt8](repeating: 0, count: 100))
            Issue.record("a short frame was covered")
        } catch {
            #expect(error.damagedFrame, "\(error)")
        }
        // FFV1 without the record it was coded with: refused, not taken for damage.
        let ffv1 = try StoredFrameCover(
            stored: VideoFormat(width: 64, height: 48, pixelFormat: .ffv1), captured: .grey, settings: .init(),
            detector: ScriptedDetector { _ in [] })
        do {
            _ = try ffv1.push([1, 2, 3])
            Issue.record("an FFV1 frame was decoded without its record")
        } catch {
            #expect(!error.damagedFrame && error.description.contains("record"), "\(error)")
        }
        for codec in [VideoFormat.PixelFormat.h264, .hevc, .fwht] {
            guard
                case .failure(let problem) = StoredFrameCover.layout(
                    stored: VideoFormat(width: 64, height: 48, pixelFormat: codec), captured: .yuyv)
            else {
                Issue.record("\(codec) is covered")
                continue
            }
            #expect(problem.description.contains("coded against each other"))
        }
        guard
            case .failure(let unnamed) = StoredFrameCover.layout(
                stored: VideoFormat(width: 64, height: 48, pixelFormat: .ffv1), captured: nil)
        else {
            Issue.record("FFV1 without its captured format is covered")
            return
        }
        #expect(unnamed.description.contains("captured pixel format"))
    }

    @Test("a Bayer mosaic: shown to the detector demosaiced in colour; each filter colour averaged on its own")
    func bayer() throws {
        // A red face-sized square on green, RGGB: red samples 200 inside, 20 outside.
        let width = 64, height = 48
        var mosaic = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width {
                let inside = (16..<40).contains(x) && (12..<36).contains(y)
                mosaic[y * width + x] =
                    switch BayerPattern.rggb.colour(column: x, row: y) {
                    case .red: inside ? 200 : 20
                    case .green: UInt8(100 + (x + y) % 5)
                    case .blue: 30
                    }
            }
        }
        let layout = try FrameLayout.of(VideoFormat(width: width, height: height, pixelFormat: .bayerRGGB)).get()
        #expect(layout.kind == .bayer8 && layout.bayer == .rggb && layout.byteCount == width * height)
        let detector = ScriptedDetector { _ in [FaceBox(x: 16, y: 12, width: 24, height: 24, score: 0.9)] }
        var settings = FaceCover.Settings()
        settings.margin = 0
        settings.blocksAcross = 2
        let cover = FaceCover(layout: layout, settings: settings, detector: detector)
        var frame = mosaic
        let boxes = try cover.cover(&frame)
        #expect(detector.shown[0].channels == 3)
        // Pixel (0, 0) is red-filtered, outside: red 20, green near 100, blue 30.
        #expect(detector.shown[0].first[0] == 20 && detector.shown[0].first[2] == 30)
        #expect(boxes == [FaceBox(x: 12, y: 12, width: 36, height: 24, score: 0.9)])
        // Blocks of 12 on the frame's grid: within each, every sample of one filter colour equal.
        for top in stride(from: 12, to: 36, by: 12) {
            for left in stride(from: 12, to: 48, by: 12) {
                for phase in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let values = Set(
                        stride(from: top + phase.1, to: top + 12, by: 2).flatMap { y in
                            stride(from: left + phase.0, to: left + 12, by: 2).map { frame[y * width + $0] }
                        })
                    #expect(values.count == 1, "block (\(left), \(top)) filter \(phase): \(values)")
                }
            }
        }
        // Outside the covered area, the mosaic as it was.
        for y in 0..<height {
            for x in 0..<width where !(12..<48).contains(x) || !(12..<36).contains(y) {
                #expect(frame[y * width + x] == mosaic[y * width + x])
            }
        }
    }
}
