import Foundation
import Testing
import FieldcapCore
@testable import FieldcapMedia

/// Runs a tool from FFmpeg's command line (ffprobe, ffmpeg) and returns its output.
func runTool(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let path = ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let path else {
        Issue.record("\(tool) is not installed; scripts/install-deps installs it (Debian package ffmpeg)")
        return (-1, "")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

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

        let probe = try runTool("ffprobe", [
            "-v", "error", "-count_frames", "-select_streams", "v:0",
            "-show_entries", "stream=codec_name,codec_tag_string,pix_fmt,width,height,nb_read_frames",
            "-of", "default=noprint_wrappers=1", path,
        ])
        #expect(probe.status == 0)
        for expected in ["codec_name=rawvideo", "pix_fmt=yuyv422", "width=64", "height=48", "nb_read_frames=30"] {
            #expect(probe.output.contains(expected), "ffprobe: \(probe.output)")
        }
        let pts = try runTool("ffprobe", [
            "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path,
        ])
        let seconds = pts.output.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        #expect(seconds.count == 30)
        for (index, value) in seconds.enumerated() {
            let expected = Double(times[index] - times[0]) / 1e9
            #expect(abs(value - expected) <= 0.0011, "frame \(index): \(value) s in the file, \(expected) s captured")
        }
        // Every frame decodes, and the last one's pixels are what was written.
        let decode = try runTool("ffmpeg", ["-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuyv422", "-y", path + ".raw"])
        defer { try? FileManager.default.removeItem(atPath: path + ".raw") }
        #expect(decode.status == 0, "\(decode.output)")
        let raw = try Data(contentsOf: URL(fileURLWithPath: path + ".raw"))
        #expect(raw.count == 30 * frame.count)
        #expect(Array(raw.suffix(frame.count)) == frame)
    }

    @Test("MJPEG frames are passed through without re-encoding")
    func mjpegPassThrough() throws {
        let jpegPath = NSTemporaryDirectory() + "/frame-\(UUID().uuidString).jpg"
        let path = jpegPath + ".mkv"
        defer {
            try? FileManager.default.removeItem(atPath: jpegPath)
            try? FileManager.default.removeItem(atPath: path)
        }
        let make = try runTool("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", "-f", "mjpeg", "-y", jpegPath])
        #expect(make.status == 0)
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: jpegPath))
        let writer = try MatroskaWriter(path: path, format: VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg), nominalRate: 10)
        for index in 0..<5 {
            try jpeg.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 100_000_000) }
        }
        try writer.finish()
        let probe = try runTool("ffprobe", [
            "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of", "default=noprint_wrappers=1", path,
        ])
        #expect(probe.output.contains("codec_name=mjpeg"))
        #expect(probe.output.contains("nb_read_frames=5"))
        let extracted = try runTool("ffmpeg", ["-v", "error", "-i", path, "-frames:v", "1", "-c", "copy", "-f", "mjpeg", "-y", path + ".jpg"])
        defer { try? FileManager.default.removeItem(atPath: path + ".jpg") }
        #expect(extracted.status == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".jpg")) == jpeg)
    }

    @Test("a path that cannot be created is an error naming it")
    func unwritablePath() {
        do {
            _ = try MatroskaWriter(path: "/nonexistent-dir/x.mkv", format: VideoFormat(width: 8, height: 8, pixelFormat: .grey), nominalRate: 1)
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
        let probe = try runTool("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "10")
    }
}
