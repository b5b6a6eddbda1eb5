import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapMedia

@Suite("Matroska writer")
struct MatroskaWriterTests {
    @Test("YUYV frames are stored losslessly with their real, variable timing")
    func rawFrames() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 64, height: 48, pixelFormat: .yuyv)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30)
        var frame = [UInt8](repeating: 0, count: format.pixelFormat.frameBytes(width: 64, height: 48)!)
        // 30 frames at 30 fps with jitter and one lost frame's gap after frame 10.
        var times: [UInt64] = []
        var t: UInt64 = 5_000_000_000
        for index in 0..<30 {
            t += 33_333_333 + UInt64(index % 3) * 1_000_000 + (index == 11 ? 33_333_333 : 0)
            times.append(t)
            for byte in frame.indices { frame[byte] = UInt8(truncatingIfNeeded: byte &+ index) }
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: t) }
        }
        try writer.finish()
        #expect(writer.frameCount == 30)

        let probe = try runTool(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0",
                "-show_entries", "stream=codec_name,codec_tag_string,pix_fmt,width,height,nb_read_frames",
                "-of", "default=noprint_wrappers=1", path,
            ])
        #expect(probe.status == 0)
        for expected in ["codec_name=rawvideo", "pix_fmt=yuyv422", "width=64", "height=48", "nb_read_frames=30"] {
            #expect(probe.output.contains(expected), "ffprobe: \(probe.output)")
        }
        let pts = try runTool(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path,
            ])
        let seconds = pts.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        #expect(seconds.count == 30)
        for (index, value) in seconds.enumerated() {
            let expected = Double(times[index] - times[0]) / 1e9
            #expect(abs(value - expected) <= 0.0011, "frame \(index): \(value) s in the file, \(expected) s captured")
        }
        // Every frame decodes, and the last one's pixels are what was written.
        let decode = try runTool(
            "ffmpeg",
            [
                "-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-y",
                path + ".raw",
            ])
        defer { try? FileManager.default.removeItem(atPath: path + ".raw") }
        #expect(decode.status == 0, "\(decode.output)")
        let raw = try Data(contentsOf: URL(fileURLWithPath: path + ".raw"))
        #expect(raw.count == 30 * frame.count)
        #expect(Array(raw.suffix(frame.count)) == frame)
    }

    @Test(
        """
        written as a live stream: no index held until the end (no Cues), \
        every frame a keyframe, and a seek still decodes the right frames
        """
    )
    func keyframeEverySecond() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 32, height: 16, pixelFormat: .yuyv)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30)
        var frame = [UInt8](repeating: 0, count: format.pixelFormat.frameBytes(width: 32, height: 16)!)
        for index in 0..<100 {  // 3.3 s at 30 fps
            for byte in frame.indices { frame[byte] = UInt8(truncatingIfNeeded: index) }
            try frame.withUnsafeBytes {
                try writer.writeFrame($0, captureNs: 1_000_000_000 + UInt64(index) * 33_333_333)
            }
        }
        try writer.finish()
        // Read from the file itself: each SimpleBlock's keyframe bit, and the index's CuePoints
        // (the muxer would keep one per frame in memory until the trailer).
        let layout = try EBMLLayout(path: path)
        #expect(layout.simpleBlockKeyFlags.count == 100)
        #expect(layout.simpleBlockKeyFlags.allSatisfy { $0 })
        #expect(layout.cuePoints == 0)
        let probe = try runTool(
            "ffprobe",
            ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "100", "\(probe.output)")
        // Without an index a seek scans; from 2.5 s, frames 75...99 come out, each its own.
        let decode = try runTool(
            "ffmpeg",
            ["-v", "error", "-ss", "2.5", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuyv422", "-y", path + ".raw"])
        defer { try? FileManager.default.removeItem(atPath: path + ".raw") }
        #expect(decode.status == 0, "\(decode.output)")
        let raw = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".raw")))
        let firstValues = stride(from: 0, to: raw.count, by: frame.count).map { raw[$0] }
        #expect(firstValues == Array(75...99).map(UInt8.init), "\(firstValues)")
    }

    @Test("MJPEG frames are passed through without re-encoding")
    func mjpegPassThrough() throws {
        let jpegPath = NSTemporaryDirectory() + "/frame-\(UUID().uuidString).jpg"
        let path = jpegPath + ".mkv"
        defer {
            try? FileManager.default.removeItem(atPath: jpegPath)
            try? FileManager.default.removeItem(atPath: path)
        }
        let make = try runTool(
            "ffmpeg",
            ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", "-f", "mjpeg", "-y", jpegPath])
        #expect(make.status == 0)
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: jpegPath))
        let writer = try MatroskaWriter(
            path: path, format: VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg), nominalRate: 10)
        for index in 0..<5 {
            try jpeg.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 100_000_000) }
        }
        try writer.finish()
        let probe = try runTool(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of",
                "default=noprint_wrappers=1", path,
            ])
        #expect(probe.output.contains("codec_name=mjpeg"))
        #expect(probe.output.contains("nb_read_frames=5"))
        let extracted = try runTool(
            "ffmpeg", ["-v", "error", "-i", path, "-frames:v", "1", "-c", "copy", "-f", "mjpeg", "-y", path + ".jpg"])
        defer { try? FileManager.default.removeItem(atPath: path + ".jpg") }
        #expect(extracted.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".jpg")) == jpeg)
    }

    @Test(
        """
        FFV1 frames are written as V_FFV1 with their configuration record, and \
        salvage keeps it: FFmpeg decodes both files to the pixels it encoded
        """
    )
    func ffv1WithCodecPrivate() throws {
        let source = NSTemporaryDirectory() + "/ffv1-\(UUID().uuidString).mkv"
        let path = source + ".fieldcap.mkv"
        defer {
            try? FileManager.default.removeItem(atPath: source)
            try? FileManager.default.removeItem(atPath: path)
        }
        let make = try runTool(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-frames:v", "6", "-pix_fmt",
                "yuv422p", "-c:v", "ffv1", "-level", "3", "-g", "1", "-y", source,
            ])
        try #require(make.status == 0, "\(make.output)")
        let decoded = { (file: String) in
            try runTool("ffmpeg", ["-v", "error", "-i", file, "-fps_mode", "passthrough", "-f", "framemd5", "-"])
                .output.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").last ?? "" }
        }
        let pixels = try decoded(source)
        #expect(pixels.count == 6)
        // FFmpeg 5.1 stores FFV1 as V_MS/VFW/FOURCC: its CodecPrivate is a 40-byte
        // BITMAPINFOHEADER, then the configuration record (the encoder's extradata).
        let header = try MatroskaFrames.codecPrivate(in: source)
        try #require(header.count > 40)
        let record = Array(header.dropFirst(40))
        let writer = try MatroskaWriter(
            path: path, format: VideoFormat(width: 64, height: 48, pixelFormat: .ffv1), nominalRate: 10,
            codecPrivate: record)
        var failure: MediaError?
        try MatroskaFrames.forEach(in: source) { bytes, ns in
            do throws(MediaError) { try writer.writeFrame(bytes, captureNs: ns) } catch { failure = error }
            return failure == nil
        }
        if let failure { throw failure }
        try writer.finish()
        #expect(try MatroskaFrames.codecPrivate(in: path) == record)
        let probe = try runTool(
            "ffprobe", ["-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "ffv1")
        var written = try decoded(path)
        #expect(written == pixels, "\(written)")
        // Rewritten as a salvage does (for a file not in the layout finishing in place needs).
        #expect(try MatroskaSalvage.salvage(path: path, format: writer.format, nominalRate: 10) == 6)
        #expect(try MatroskaFrames.codecPrivate(in: path) == record)
        written = try decoded(path)
        #expect(written == pixels, "\(written)")
    }

    @Test("a path that cannot be created is an error naming it")
    func unwritablePath() {
        do {
            _ = try MatroskaWriter(
                path: "/nonexistent-dir/x.mkv", format: VideoFormat(width: 8, height: 8, pixelFormat: .grey),
                nominalRate: 1)
            Issue.record("opened a file in a directory that does not exist")
        } catch {
            #expect(error.description.contains("/nonexistent-dir/x.mkv"))
            #expect(error.operation == "open")
            #expect(error.description.contains("No such file or directory"))
        }
    }
}

@Suite("Matroska writer durability")
struct MatroskaDurabilityTests {
    @Test("after sync() the frames written so far are in the file, before finish()")
    func syncWritesThrough() throws {
        let path = NSTemporaryDirectory() + "/mkv-sync-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 64, height: 48, pixelFormat: .grey)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 10)
        let frame = [UInt8](repeating: 0x80, count: 64 * 48)
        for index in 0..<10 {
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 100_000_000) }
        }
        try writer.sync()
        // The pixels of all ten frames are in the file now (libavformat's 1 MiB buffer would
        // otherwise still hold them).
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0
        #expect(size >= UInt64(10 * frame.count))
        try writer.finish()
        let probe = try runTool(
            "ffprobe",
            ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "10")
    }

    @Test(
        "a finished file reads back whole: recovering a session killed after its videos were finished keeps every frame"
    )
    func finishedFileReadsBack() throws {
        let path = NSTemporaryDirectory() + "/mkv-finished-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 64, height: 48, pixelFormat: .grey)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 10)
        for index in 0..<7 {
            let frame = [UInt8](repeating: UInt8(index), count: 64 * 48)
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 100_000_000) }
        }
        try writer.finish()
        // A finished Segment has a size (the whole file), no longer "unknown".
        #expect(MatroskaSalvage.countFrames(path: path, format: format) == 7)
        #expect(try MatroskaSalvage.salvage(path: path, format: format, nominalRate: 10) == 7)
        #expect(MatroskaSalvage.countFrames(path: path, format: format) == 7)
    }
}

/// The few Matroska (EBML) facts a test reads from a file: the keyframe bit of each SimpleBlock
/// and the number of CuePoints. A walker over element IDs and sizes, for checking only.
struct EBMLLayout {
    var simpleBlockKeyFlags: [Bool] = []
    var cuePoints = 0
    /// The whole length (ID, size, data) of each Void element.
    var voidLengths: [Int] = []
    /// Where each Cluster starts and ends in the file.
    var clusters: [Range<Int>] = []

    static let segment: UInt32 = 0x1853_8067, cluster: UInt32 = 0x1F43_B675, cues: UInt32 = 0x1C53_BB6B
    static let simpleBlock: UInt32 = 0xA3, cuePoint: UInt32 = 0xBB, void: UInt32 = 0xEC

    /// A file's bytes with its TrackUID (random per file) zeroed, to compare two files' layout.
    /// How many bytes the TrackUID's value takes: the writer pads it to 8, so that a random UID
    /// with a leading zero byte (one in 256) does not change the file's layout.
    static func trackUIDLength(_ data: Data) -> Int? {
        let bytes = [UInt8](data)
        guard let at = (0..<(bytes.count - 3)).first(where: { bytes[$0] == 0x73 && bytes[$0 + 1] == 0xC5 }) else {
            return nil
        }
        return Int(bytes[at + 2] & 0x7F)
    }

    static func withoutTrackUID(_ data: Data) -> Data {
        var bytes = [UInt8](data)
        // TrackUID: ID 0x73C5, a one-byte size, the value.
        if let at = (0..<(bytes.count - 3)).first(where: { bytes[$0] == 0x73 && bytes[$0 + 1] == 0xC5 }) {
            let length = Int(bytes[at + 2] & 0x7F)
            for index in (at + 3)..<min(bytes.count, at + 3 + length) { bytes[index] = 0 }
        }
        return Data(bytes)
    }

    init(path: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        walk(bytes, 0..<bytes.count)
    }

    /// A variable-length integer at `offset`: its value (marker kept for IDs) and its length.
    private static func vint(_ bytes: [UInt8], _ offset: Int, keepMarker: Bool) -> (UInt64, Int)? {
        guard offset < bytes.count, bytes[offset] != 0 else { return nil }
        let length = bytes[offset].leadingZeroBitCount + 1
        guard offset + length <= bytes.count else { return nil }
        var value = UInt64(keepMarker ? bytes[offset] : bytes[offset] & (0xFF >> length))
        for index in 1..<length { value = value << 8 | UInt64(bytes[offset + index]) }
        return (value, length)
    }

    private mutating func walk(_ bytes: [UInt8], _ range: Range<Int>) {
        var offset = range.lowerBound
        while offset < range.upperBound {
            guard let (id, idLength) = Self.vint(bytes, offset, keepMarker: true),
                let (rawSize, sizeLength) = Self.vint(bytes, offset + idLength, keepMarker: false)
            else { return }
            let start = offset + idLength + sizeLength
            let unknown = rawSize == (UInt64(1) << (7 * UInt64(sizeLength))) - 1
            let end = unknown ? range.upperBound : min(range.upperBound, start + Int(rawSize))
            switch UInt32(id) {
            case Self.cluster:
                clusters.append(offset..<end)
                walk(bytes, start..<end)
            case Self.segment, Self.cues: walk(bytes, start..<end)
            case Self.simpleBlock:
                if let (_, trackLength) = Self.vint(bytes, start, keepMarker: false), start + trackLength + 2 < end {
                    simpleBlockKeyFlags.append(bytes[start + trackLength + 2] & 0x80 != 0)
                }
            case Self.cuePoint: cuePoints += 1
            case Self.void: voidLengths.append(end - offset)
            default: break
            }
            offset = end
        }
    }
}
