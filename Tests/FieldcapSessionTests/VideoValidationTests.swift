import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

@Suite("validate: each linked video against its manifest")
struct VideoValidationTests {
    /// A 2 s session at 30 fps: `cam` stamped and linked to `cam.mkv` with 61 frames, and an IMU.
    /// With `fieldcap`, a fieldcap.json beside it.
    private func makeSession(fieldcap: Bool = true) throws -> String {
        let path = NSTemporaryDirectory() + "/videocheck-\(UUID().uuidString)"
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        let format = VideoFormat(width: 32, height: 24, pixelFormat: .yuyv)
        let writer = try MatroskaWriter(path: "\(path)/cam.mkv", format: format, nominalRate: 30)
        let frame = [UInt8](repeating: 0x80, count: format.pixelFormat.frameBytes(width: 32, height: 24)!)
        for index in 0..<61 {
            let capture = 9_000_000_000 + UInt64(index) * 33_333_333
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: capture) }
            try session.stamp("cam", frameNumber: index, captureNs: capture)
        }
        for index in 0..<400 { try session.record("imu", frameNumber: index, channels: ["accel_x": Double(index)]) }
        try writer.finish()
        session.link("cam", path: "\(path)/cam.mkv")
        try session.stop()
        if fieldcap { FileManager.default.createFile(atPath: "\(path)/fieldcap.json", contents: Data("{}".utf8)) }
        return path
    }

    /// Cuts `cam`'s timestamp lines and the manifest's frame_count to `count`.
    private func cutStamps(_ path: String, to count: Int) throws {
        let lines = try String(contentsOfFile: "\(path)/cam.timestamps.jsonl", encoding: .utf8).split(separator: "\n")
        try (lines.prefix(count).joined(separator: "\n") + "\n").write(
            toFile: "\(path)/cam.timestamps.jsonl", atomically: true, encoding: .utf8)
        let manifest = try String(contentsOfFile: "\(path)/manifest.json", encoding: .utf8)
        try manifest.replacingOccurrences(of: #""frame_count": 61,"#, with: #""frame_count": \#(count),"#)
            .write(toFile: "\(path)/manifest.json", atomically: true, encoding: .utf8)
    }

    private func messages(_ report: SessionValidator.Report) -> [String] { report.problems.map(\.description) }

    /// sync_point.json's two clocks.
    private func syncClocks(_ path: String) throws -> (monotonic: UInt64, wall: UInt64) {
        let sync = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: "\(path)/sync_point.json")))
        let point = try #require(sync as? [String: Any])
        return (
            try #require((point["monotonic_ns"] as? NSNumber)?.uint64Value),
            try #require((point["wall_clock_ns"] as? NSNumber)?.uint64Value)
        )
    }

    /// `cam`'s timestamps as `original`, the last line's capture_ns set to `capture`.
    private func setLastCapture(_ capture: UInt64, path: String, original: String) throws {
        var lines = original.split(separator: "\n").map(String.init)
        let last = try #require(lines.last)
        let number = try #require(last.firstRange(of: #/"capture_ns":\d+/#))
        lines[lines.count - 1] = last.replacingCharacters(in: number, with: #""capture_ns":\#(capture)"#)
        try (lines.joined(separator: "\n") + "\n").write(
            toFile: "\(path)/cam.timestamps.jsonl", atomically: true, encoding: .utf8)
    }

    @Test("a video holding 61 frames whose manifest and timestamp lines were cut to 49 fails, with the numbers")
    func frameCountMismatch() throws {
        let path = try makeSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(SessionValidator.validateWithVideos(directory: path).problems.isEmpty)
        try cutStamps(path, to: 49)
        // The SyncField rules alone see nothing wrong: the manifest matches its 49 lines.
        #expect(SessionValidator.validate(directory: path).isValid)
        let report = SessionValidator.validateWithVideos(directory: path)
        #expect(!report.isValid)
        #expect(
            messages(report) == [
                "manifest.json: streams.cam.frame_count is 49 but cam.mkv holds 61 frames: "
                    + "`fieldcap recover` brings the video and its timestamp lines back into agreement"
            ])
    }

    @Test("a linked video that is missing, not Matroska, or has no video track is a problem naming it")
    func notAVideo() throws {
        let path = try makeSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("not a video\n".utf8).write(to: URL(fileURLWithPath: "\(path)/cam.mkv"))
        #expect(
            messages(SessionValidator.validateWithVideos(directory: path)) == [
                "manifest.json: streams.cam.path: cam.mkv is not a Matroska "
                    + "file (no EBML header with DocType matroska or webm)"
            ])
        let audio = try runTool(
            "ffmpeg",
            ["-v", "error", "-f", "lavfi", "-i", "sine=duration=0.2", "-f", "matroska", "-y", "\(path)/cam.mkv"])
        #expect(audio.status == 0, "\(audio.output)")
        #expect(
            messages(SessionValidator.validateWithVideos(directory: path)) == [
                "manifest.json: streams.cam.path: cam.mkv has no video track"
            ])
        try FileManager.default.removeItem(atPath: "\(path)/cam.mkv")
        #expect(
            messages(SessionValidator.validateWithVideos(directory: path)) == [
                "manifest.json: streams.cam.path: \(path)/cam.mkv does "
                    + "not exist (nor does cam.mkv in the session directory)"
            ])
        try FileManager.default.createDirectory(atPath: "\(path)/cam.mkv", withIntermediateDirectories: false)
        #expect(!SessionValidator.validateWithVideos(directory: path).isValid)
    }

    @Test("a session moved elsewhere finds its video beside the manifest, and is checked against it")
    func movedSession() throws {
        let path = try makeSession()
        let moved = path + "-moved"
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        defer { try? FileManager.default.removeItem(atPath: moved) }
        #expect(SessionValidator.validateWithVideos(directory: moved).problems.isEmpty)
        try cutStamps(moved, to: 49)
        #expect(
            messages(SessionValidator.validateWithVideos(directory: moved)).first?.contains(
                "frame_count is 49 but cam.mkv holds 61 frames") == true)
    }

    @Test("another recorder's video in another container is not counted, and says so; fieldcap's must be Matroska")
    func otherContainers() throws {
        let path = try makeSession(fieldcap: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let mp4 = "\(path)/cam.mp4"
        FileManager.default.createFile(atPath: mp4, contents: Data([0, 0, 0, 0x18] + Array("ftypisom".utf8)))
        let manifest = try String(contentsOfFile: "\(path)/manifest.json", encoding: .utf8)
        try manifest.replacingOccurrences(of: #"cam.mkv""#, with: #"cam.mp4""#).write(
            toFile: "\(path)/manifest.json", atomically: true, encoding: .utf8)
        let report = SessionValidator.validateWithVideos(directory: path)
        #expect(report.isValid, "\(report.problems)")
        #expect(
            report.warnings.map(\.description).contains(
                "manifest.json: streams.cam.path: cam.mp4 is not a Matroska file, so its frames were not counted"))
        FileManager.default.createFile(atPath: "\(path)/fieldcap.json", contents: Data("{}".utf8))
        #expect(!SessionValidator.validateWithVideos(directory: path).isValid)
    }

    @Test(
        """
        a stream's last capture_ns 292 years after fieldcap.json's \
        stopped_utc is a problem; a minute after is not (#42)
        """
    )
    func captureLongAfterTheStop() throws {
        let path = try makeSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (monotonic, wall) = try syncClocks(path)
        // Stopped 3 s after the sync point, as the wall clock saw it.
        let stopped = Date(timeIntervalSince1970: Double(wall) / 1e9 + 3)
        let format = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let sidecar =
            #"{"started_utc":"\#(format.format(Date(timeIntervalSince1970: Double(wall) / 1e9)))","#
            + #""stopped_utc":"\#(format.format(stopped))"}"#
        try Data(sidecar.utf8).write(to: URL(fileURLWithPath: "\(path)/fieldcap.json"))
        let original = try String(contentsOfFile: "\(path)/cam.timestamps.jsonl", encoding: .utf8)
        func lastLine(at capture: UInt64) throws { try setLastCapture(capture, path: path, original: original) }
        try lastLine(at: monotonic + 60_000_000_000)
        #expect(messages(SessionValidator.validateWithVideos(directory: path)) == [])
        let jumped = monotonic + 292 * 365 * 86_400 * 1_000_000_000
        try lastLine(at: jumped)
        #expect(
            messages(SessionValidator.validateWithVideos(directory: path)) == [
                "cam.timestamps.jsonl: the last line's capture_ns \(jumped) is 291 years after "
                    + "the recording stopped (\(format.format(stopped)), through the sync point, "
                    + "fieldcap.json): a jump of the clock or damage, not a time stream cam recorded"
            ])
    }

    @Test(
        "with the stop in the monotonic clock (stopped_monotonic_raw_ns), an hour past it is a problem, a minute is not"
    )
    func captureAfterTheMonotonicStop() throws {
        let path = try makeSession()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (monotonic, _) = try syncClocks(path)
        let stop = monotonic + 3_000_000_000
        // The wall clock at the stop, years before the sync point (stepped back): only the
        // monotonic stop counts.
        let sidecar = #"{"stopped_utc":"2001-01-01T00:00:00.000Z","stopped_monotonic_raw_ns":\#(stop)}"#
        try Data(sidecar.utf8).write(to: URL(fileURLWithPath: "\(path)/fieldcap.json"))
        let original = try String(contentsOfFile: "\(path)/cam.timestamps.jsonl", encoding: .utf8)
        func lastLine(at capture: UInt64) throws { try setLastCapture(capture, path: path, original: original) }
        try lastLine(at: stop + 60_000_000_000)
        #expect(messages(SessionValidator.validateWithVideos(directory: path)) == [])
        try lastLine(at: stop + 3_600_000_000_000)
        #expect(
            messages(SessionValidator.validateWithVideos(directory: path)) == [
                "cam.timestamps.jsonl: the last line's capture_ns \(stop + 3_600_000_000_000) "
                    + "is 1 hour after the recording stopped (stopped_monotonic_raw_ns \(stop), "
                    + "fieldcap.json): a jump of the clock or damage, not a time stream cam recorded"
            ])
    }
}

@Suite("validate: a fieldcap session's frame numbers are the frames' indices")
struct FrameNumberValidationTests {
    @Test("frame_number 400 at line 5 of a fieldcap camera's timestamps is a problem naming the line (#42)")
    func frameNumberOutOfPlace() throws {
        let path = NSTemporaryDirectory() + "/framenumbers-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        let format = VideoFormat(width: 32, height: 24, pixelFormat: .grey)
        let writer = try MatroskaWriter(path: "\(path)/cam.mkv", format: format, nominalRate: 30)
        let frame = [UInt8](repeating: 0x80, count: 32 * 24)
        for index in 0..<8 {
            let capture = 9_000_000_000 + UInt64(index) * 33_333_333
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: capture) }
            // Rising, as SyncField asks, but the fifth line's number is not its frame's index.
            try session.stamp(
                "cam", frameNumber: index == 4 ? 400 : index < 4 ? index : 400 + index, captureNs: capture)
        }
        try writer.finish()
        session.link("cam", path: "\(path)/cam.mkv")
        try session.stop()
        // SyncField's rules alone accept it; another recorder's session is left to them.
        #expect(SessionValidator.validateWithVideos(directory: path).isValid)
        FileManager.default.createFile(atPath: "\(path)/fieldcap.json", contents: Data("{}".utf8))
        let problems = SessionValidator.validateWithVideos(directory: path).problems.map(\.description)
        #expect(
            problems == [
                "cam.timestamps.jsonl:5: frame_number is 400, but in a "
                    + "fieldcap session it is the frame's index in cam.mkv (4)"
            ], "\(problems)")
    }
}

extension FrameNumberValidationTests {
    @Test("a frame_number of more digits than an Int holds is reported as written, not summed into a trap (#42)")
    func frameNumberTooLong() throws {
        let path = NSTemporaryDirectory() + "/framenumbers-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        let writer = try MatroskaWriter(
            path: "\(path)/cam.mkv", format: VideoFormat(width: 32, height: 24, pixelFormat: .grey), nominalRate: 30)
        let frame = [UInt8](repeating: 0x80, count: 32 * 24)
        for index in 0..<8 {
            let capture = 9_000_000_000 + UInt64(index) * 33_333_333
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: capture) }
            try session.stamp("cam", frameNumber: index, captureNs: capture)
        }
        try writer.finish()
        session.link("cam", path: "\(path)/cam.mkv")
        try session.stop()
        FileManager.default.createFile(atPath: "\(path)/fieldcap.json", contents: Data("{}".utf8))
        let timestamps = "\(path)/cam.timestamps.jsonl"
        let huge = "99999999999999999999999"
        let text = try String(contentsOfFile: timestamps, encoding: .utf8)
            .replacingOccurrences(of: #""frame_number":4,"#, with: #""frame_number":\#(huge),"#)
            .replacingOccurrences(of: #""frame_number":4}"#, with: #""frame_number":\#(huge)}"#)
        try text.write(toFile: timestamps, atomically: true, encoding: .utf8)
        let problems = SessionValidator.validateWithVideos(directory: path).problems.map(\.description)
        #expect(
            problems.contains(
                "cam.timestamps.jsonl:5: frame_number is \(huge), but in "
                    + "a fieldcap session it is the frame's index in cam.mkv (4)"
            ), "\(problems)")
    }

}
