import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

@Suite("Camera recovery: the video and its timestamp lines in agreement")
struct CameraRecoveryTests {
    typealias Logged = CameraRecovery.LoggedFrame

    /// Frames 33.3 ms apart from 5 s, as the camera stamped them, with 1 µs uncertainty.
    static let captures: [UInt64] = (0..<20).map { 5_000_000_000 + UInt64($0) * 33_333_333 + UInt64($0 % 3) * 211_000 }
    /// Where MatroskaWriter puts them: ms ticks from the first.
    static let videoTimes: [UInt64] = captures.map { ($0 - captures[0] + 500_000) / 1_000_000 * 1_000_000 }

    static func log(_ index: Int) -> Logged? {
        index < captures.count
            ? Logged(frameNumber: index, captureNs: captures[index], uncertaintyNs: 1_000 + UInt64(index)) : nil
    }

    private func plan(video: Int, stamped: Int, logged: @escaping (Int) -> Logged? = log) -> CameraRecovery.Plan {
        CameraRecovery.plan(
            videoTimesNs: Array(Self.videoTimes.prefix(video)), stampedLines: stamped,
            firstCaptureNs: stamped > 0 ? Self.captures[0] : nil,
            lastCaptureNs: stamped > 0 ? Self.captures[stamped - 1] : nil,
            logged: logged)
    }

    @Test("a video ahead of its timestamp lines gets them back from the frame log, with the values stamped")
    func restoredFromLog() {
        let result = plan(video: 20, stamped: 8)
        #expect(result.frames == 20)
        #expect(
            result.restored
                == (8..<20).map {
                    .init(captureNs: Self.captures[$0], frameNumber: $0, uncertaintyNs: 1_000 + UInt64($0))
                })
        // From no line at all: the first frame's log line is the anchor.
        #expect(plan(video: 20, stamped: 0).restored.count == 20)
    }

    @Test("timestamp lines ahead of the video are cut to its frames; none is restored")
    func stampsAhead() {
        #expect(plan(video: 12, stamped: 20) == CameraRecovery.Plan(frames: 12, restored: []))
        #expect(plan(video: 12, stamped: 12) == CameraRecovery.Plan(frames: 12, restored: []))
    }

    @Test(
        "frames whose log line is missing, old (no uncertainty_ns), or another frame's are cut, from the first of them")
    func cutWhereTheLogCannotSay() {
        #expect(plan(video: 20, stamped: 8) { $0 < 15 ? Self.log($0) : nil }.frames == 15)
        #expect(
            plan(video: 20, stamped: 8) { index in
                Self.log(index).map { Logged(frameNumber: $0.frameNumber, captureNs: $0.captureNs, uncertaintyNs: nil) }
            }.frames == 8)
        #expect(plan(video: 20, stamped: 8) { Self.log($0 == 11 ? 12 : $0) }.frames == 11)
        // A time that is not the frame's in the video (2 ms off), or before the line before it.
        #expect(
            plan(video: 20, stamped: 8) { index in
                Self.log(index).map {
                    index == 13 ? Logged(frameNumber: index, captureNs: $0.captureNs + 2_000_000, uncertaintyNs: 5) : $0
                }
            }.frames == 13)
        #expect(
            plan(video: 20, stamped: 8) { index in
                Self.log(index).map {
                    index == 9 ? Logged(frameNumber: index, captureNs: Self.captures[7] - 1, uncertaintyNs: 5) : $0
                }
            }.frames == 9)
        // No line and no log: nothing to anchor the frames' times to.
        #expect(plan(video: 20, stamped: 0) { _ in nil } == CameraRecovery.Plan(frames: 0, restored: []))
    }

    @Test("frames stamped within one tick of each other are matched as the writer nudged them apart")
    func nudgedTicks() throws {
        let captures: [UInt64] = [1_000_000_000, 1_000_200_000, 1_000_400_000, 1_000_900_000, 1_010_000_000]
        let path = NSTemporaryDirectory() + "/nudged-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 16, height: 16, pixelFormat: .grey)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 1000)
        let frame = [UInt8](repeating: 1, count: 256)
        for capture in captures { try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: capture) } }
        try writer.finish()
        let times = try MatroskaScan(path: path).frames.map(\.timeNs)
        #expect(times == [0, 1_000_000, 2_000_000, 3_000_000, 10_000_000])
        let result = CameraRecovery.plan(
            videoTimesNs: times, stampedLines: 1, firstCaptureNs: captures[0], lastCaptureNs: captures[0],
            logged: { Logged(frameNumber: $0, captureNs: captures[$0], uncertaintyNs: 7) })
        #expect(result.frames == 5)
    }
}

@Suite("Frame log")
struct FrameLogTests {
    @Test(
        """
        each frame's log line is written right after the frame, not at \
        the next sync: a kill leaves none of the video's frames without it
        """
    )
    func lineFollowsItsFrame() throws {
        let path = NSTemporaryDirectory() + "/framelog-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        let format = VideoFormat(width: 16, height: 8, pixelFormat: .grey)
        let sink = VideoSessionSink(session: session)
        try sink.open(streams: [
            StreamDescriptor(id: "cam", kind: .video, nominalRate: 30, device: "test", videoFormat: format)
        ])
        let frame = [UInt8](repeating: 7, count: 128)
        for index in 0..<5 {
            var record = CaptureRecord()
            record.sequence = UInt64(index)
            record.captureNs = 1_000_000_000 + UInt64(index) * 33_333_333
            record.uncertaintyNs = 1_000
            try frame.withUnsafeBytes { try sink.write(record, frame: $0, stream: 0, frameNumber: index) }
            // No sync yet: what the kernel has (a killed process's files keep it).
            let logged = try String(contentsOfFile: "\(path)/cam.frames.ndjson", encoding: .utf8).split(separator: "\n")
            #expect(logged.count == index + 1)
            #expect(try MatroskaScan(path: "\(path)/cam.mkv").frames.count == index + 1)
        }
        _ = try sink.close()
    }
}

/// A synthetic recording whose files are then set back to what a power cut leaves, and recovered.
@Suite("Recovering a camera after a power cut")
struct PowerCutRecoveryTests {
    /// Records two synthetic cameras and an IMU for 2 s with the recorder's own sink; returns
    /// the directory.
    private func record() throws -> String {
        let path = NSTemporaryDirectory() + "/powercut-\(UUID().uuidString)"
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        let syncPoint = try session.start()
        let sources: [CaptureSource] = [
            SyntheticCamera(id: "cam_a", width: 320, height: 240, rate: 30),
            SyntheticCamera(id: "cam_b", width: 160, height: 120, rate: 30),
            SyntheticIMU(id: "imu", rate: 200),
        ]
        let streams: [JSONValue] = sources.map { source in
            var entry: [String: JSONValue] = [
                "id": .string(source.descriptor.id), "nominal_rate": .double(source.descriptor.nominalRate),
            ]
            if let format = source.descriptor.videoFormat {
                entry["format"] = [
                    "width": JSONValue(format.width), "height": JSONValue(format.height),
                    "pixel_format": .string(format.pixelFormat.rawValue),
                ]
                entry["linked_path"] = .string("\(path)/\(source.descriptor.id).mkv")
            }
            return .object(entry)
        }
        try Sidecar.store(
            [
                "state": "recording", "host_id": "rig_01", "streams": .array(streams),
                "sync_point": [
                    "monotonic_ns": JSONValue(syncPoint.monotonicNs), "wall_clock_ns": JSONValue(syncPoint.wallClockNs),
                ],
            ], layout: SessionLayout(directory: path))
        let recorder = Recorder(sources: sources, sink: VideoSessionSink(session: session))
        try recorder.start()
        usleep(2_000_000)
        try recorder.stop()
        return path
    }

    /// The state a power cut leaves: no manifest or sync point, fieldcap.json still "recording",
    /// `cam`'s timestamp lines cut to `keep` (and a half line), its log to `logKeep`.
    private func cut(_ path: String, _ cam: String, keep: Int, logKeep: Int? = nil) throws {
        for name in ["manifest.json", "sync_point.json"] {
            try FileManager.default.removeItem(atPath: "\(path)/\(name)")
        }
        var document = Sidecar.Contents(layout: SessionLayout(directory: path))!.document
        document["state"] = "recording"
        try Sidecar.store(document, layout: SessionLayout(directory: path))
        let stamps = try String(contentsOfFile: "\(path)/\(cam).timestamps.jsonl", encoding: .utf8).split(
            separator: "\n")
        try (stamps.prefix(keep).joined(separator: "\n") + "\n{\"capture_ns\":12").write(
            toFile: "\(path)/\(cam).timestamps.jsonl", atomically: false, encoding: .utf8)
        if let logKeep {
            let log = try String(contentsOfFile: "\(path)/\(cam).frames.ndjson", encoding: .utf8).split(separator: "\n")
            try (log.prefix(logKeep).joined(separator: "\n") + "\n").write(
                toFile: "\(path)/\(cam).frames.ndjson", atomically: false, encoding: .utf8)
        }
    }

    private func notes(_ path: String, _ id: String) -> JSONValue {
        Sidecar.Contents(layout: SessionLayout(directory: path))!.document["recovery"]!["streams"]![id]!
    }

    @Test("the lines the cut took come back byte for byte from the frame log; the video keeps every frame")
    func linesRestored() throws {
        let path = try record()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try Data(contentsOf: URL(fileURLWithPath: "\(path)/cam_a.timestamps.jsonl"))
        let frames = original.count { $0 == 10 }
        #expect(frames >= 40)
        try cut(path, "cam_a", keep: frames - 12)
        var said: [String] = []
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { said.append($0) })
        else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(path)/cam_a.timestamps.jsonl")) == original)
        #expect(try MatroskaScan(path: "\(path)/cam_a.mkv").frames.count == frames)
        let note = notes(path, "cam_a")
        #expect(note["timestamp_lines_restored"] == 12 && note["frames_cut"] == 0, "\(note)")
        #expect(notes(path, "cam_b")["timestamp_lines_restored"] == 0)
        #expect(
            said.contains {
                $0.contains(
                    "cam_a: \(frames) frames in cam_a.mkv and \(frames) "
                        + "timestamp lines (12 restored from cam_a.frames.ndjson"
                )
            }, "\(said)")
        #expect(
            Sidecar.Contents(layout: SessionLayout(directory: path))!.document["recovery"]?["camera_timestamps"]?
                .stringValue != nil)
    }

    @Test("frames whose lines neither file kept are cut from the video, which then holds one frame per line")
    func framesCut() throws {
        let path = try record()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let frames = try String(contentsOfFile: "\(path)/cam_b.timestamps.jsonl", encoding: .utf8).count { $0 == "\n" }
        try cut(path, "cam_b", keep: frames - 12, logKeep: frames - 5)
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { _ in }) else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        // 7 restored from the log, the 5 frames after it cut.
        let lines = try String(contentsOfFile: "\(path)/cam_b.timestamps.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == frames - 5)
        #expect(try MatroskaScan(path: "\(path)/cam_b.mkv").frames.count == frames - 5)
        #expect(
            try runTool(
                "ffprobe",
                [
                    "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                    "\(path)/cam_b.mkv",
                ]
            )
            .output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(frames - 5)")
        let note = notes(path, "cam_b")
        #expect(note["timestamp_lines_restored"] == 7 && note["frames_cut"] == 5, "\(note)")
        for (index, line) in lines.enumerated() { #expect(line.contains(#""frame_number":\#(index),"#)) }
    }

    @Test("a cut before any stream file reached the disk leaves a valid session with every stream empty")
    func nothingReachedTheDisk() throws {
        let path = try record()
        defer { try? FileManager.default.removeItem(atPath: path) }
        try cut(path, "cam_a", keep: 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where name != "fieldcap.json" {
            try FileManager.default.removeItem(atPath: "\(path)/\(name)")
        }
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { _ in }) else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        #expect(report.streamCount == 3 && report.lineCount == 0)
        #expect(try MatroskaScan(path: "\(path)/cam_a.mkv").frames.isEmpty)
    }

    @Test("with no room to rewrite the video (a full disk) the frames are cut in place")
    func cutInPlace() throws {
        let path = try record()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let frames = try String(contentsOfFile: "\(path)/cam_a.timestamps.jsonl", encoding: .utf8).count { $0 == "\n" }
        try cut(path, "cam_a", keep: frames - 10, logKeep: frames - 10)
        try SessionFinisher.finish(
            directory: path, start: Sidecar.Contents(layout: SessionLayout(directory: path))!, rewriteVideos: false,
            state: "stopped: test"
        ) { _ in }
        #expect(try MatroskaScan(path: "\(path)/cam_a.mkv").frames.count == frames - 10)
        #expect(
            try String(contentsOfFile: "\(path)/cam_a.timestamps.jsonl", encoding: .utf8).count { $0 == "\n" } == frames
                - 10)
        #expect(SessionValidator.validateWithVideos(directory: path).isValid)
    }

    @Test("a session an older recover left with more frames than lines (state recovered) is finished again")
    func olderRecoveryRepaired() throws {
        let path = try record()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let original = try Data(contentsOf: URL(fileURLWithPath: "\(path)/cam_a.timestamps.jsonl"))
        let frames = original.count { $0 == 10 }
        try cut(path, "cam_a", keep: frames - 12)
        try SessionRecovery.trimJSONLines(path: "\(path)/cam_a.timestamps.jsonl")
        let start = Sidecar.Contents(layout: SessionLayout(directory: path))!
        try SessionRecovery.finish(
            directory: path, syncPoint: start.syncPoint,
            timestampCounts: [
                "cam_a": frames - 12,
                "cam_b": try String(contentsOfFile: "\(path)/cam_b.timestamps.jsonl", encoding: .utf8).count {
                    $0 == "\n"
                },
                "imu": try String(contentsOfFile: "\(path)/imu.timestamps.jsonl", encoding: .utf8).count { $0 == "\n" },
            ],
            recorded: ["imu"], links: ["cam_a": "\(path)/cam_a.mkv", "cam_b": "\(path)/cam_b.mkv"])
        var document = start.document
        document["state"] = "recovered"
        try Sidecar.store(document, layout: SessionLayout(directory: path))
        #expect(SessionValidator.validate(directory: path).isValid)
        #expect(!SessionValidator.validateWithVideos(directory: path).isValid)
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { _ in }) else {
            Issue.record("left alone")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(path)/cam_a.timestamps.jsonl")) == original)
    }
}
