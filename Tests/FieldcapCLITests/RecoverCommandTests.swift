import FieldcapSegments
import Foundation
import SyncField
import TestSupport
import Testing

@Suite("fieldcap recover")
struct RecoverCommandTests {
    private func lines(_ path: String) -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map {
            try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    @Test(
        """
        SIGKILL at 20 random moments of a four-camera (YUYV, MJPEG, YUYV encoded \
        as JPEG, Y16 as FFV1) + IMU recording: every session recovers, validates, \
        keeps all but the last second, and ffprobe decodes every frame kept
        """
    )
    func killedRecordings() throws {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let out = freshPath("recover-kill")
            defer { try? FileManager.default.removeItem(atPath: out) }
            var killedAtRaw: UInt64 = 0
            let delay = UInt32.random(in: 300_000...2_000_000, using: &generator)
            _ = try FieldcapProcess.run([
                "--cam", "synthetic:160x120@30,id=cam_left", "--cam", "synthetic:160x120@30,id=cam_right,format=MJPG",
                "--cam", "synthetic:160x120@30,id=cam_jpeg,encode=jpeg",
                "--cam", "synthetic:160x120@30,id=cam_ffv1,format=Y16,encode=ffv1", "--imu", "synthetic:500,id=imu",
                "--out", out,
                "-q",
            ]) { process in
                let deadline = Date().addingTimeInterval(30)
                while !FileManager.default.fileExists(atPath: out + "/fieldcap.json") && Date() < deadline {
                    usleep(10_000)
                }
                usleep(delay)
                killedAtRaw = MonotonicClock.now()
                kill(process.processIdentifier, SIGKILL)
            }
            let result = try FieldcapProcess.run(["recover", out])
            #expect(
                result.status == 0, "round \(round), killed \(delay / 1000) ms in: \(result.stdout) \(result.stderr)")
            #expect(SessionValidator.validate(directory: out).isValid, "round \(round)")
            let info =
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/fieldcap.json")))
                as! [String: Any]
            #expect(info["state"] as? String == "recovered")
            for id in ["cam_left", "cam_right", "cam_jpeg", "cam_ffv1", "imu"] {
                let stamps = lines("\(out)/\(id).timestamps.jsonl")
                // Durable at least once a second: what is lost is at most the last second (plus
                // the moment the writer needs to take a record from its ring).
                if delay > 1_600_000 {
                    let last = (stamps.last?["capture_ns"] as? NSNumber)?.uint64Value ?? 0
                    #expect(
                        last + 1_500_000_000 >= killedAtRaw,
                        "round \(round) \(id): last kept line \(Double(killedAtRaw &- last) / 1e9) s before the kill")
                }
                if id.hasPrefix("cam") {
                    // The video holds exactly one frame per timestamp line; the lines the kill
                    // took from the SyncField writer's batch come back from the frame log, so at
                    // most the frame whose log line was not yet written is cut.
                    let frames =
                        ((info["recovery"] as! [String: Any])["streams"] as! [String: Any])[id] as! [String: Any]
                    #expect(stamps.count == frames["frames_in_video"] as! Int, "round \(round) \(id)")
                    #expect((frames["frames_cut"] as! Int) <= 1, "round \(round) \(id): \(frames)")
                    // Decoded, not just counted: a cut JPEG or FFV1 frame would show as an error (FFV1's
                    // slice CRCs) or a missing frame. A video a kill left without frames (an encoder on a
                    // busy machine may not have written its first) is judged by the checks above:
                    // ffprobe answers a Matroska file without a Cluster with "End of file".
                    if stamps.isEmpty { continue }
                    let probe = try runTool(
                        "ffprobe",
                        [
                            "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                            "\(out)/\(id).mkv",
                        ])
                    #expect(
                        probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "\(stamps.count)",
                        "round \(round) \(id): ffprobe says \(probe.output), the timestamps \(stamps.count)")
                }
            }
        }
    }

    @Test(
        "SIGKILL of a segmented recording: recover finishes the open segment, removes the unused one, leaves the rest")
    func killedSegmentedRecording() throws {
        let out = freshPath("recover-segments")
        defer { try? FileManager.default.removeItem(atPath: out) }
        _ = try FieldcapProcess.run([
            "--cam", "synthetic:160x120@30", "--imu", "synthetic:200", "--segment", "500ms", "--out", out, "-q",
        ]) { process in
            let deadline = Date().addingTimeInterval(30)
            // Killed in the middle of the fifth segment.
            while Date() < deadline
                && (try? FileManager.default.contentsOfDirectory(atPath: out))?.contains(where: {
                    $0.hasPrefix("00000005-")
                })
                    != true
            {
                usleep(10_000)
            }
            usleep(200_000)
            kill(process.processIdentifier, SIGKILL)
        }
        let before = try #require(RecordingIndex.read(directory: out))
        #expect(before.state == "recording")
        let finished = before.segments.filter { $0.state == .complete }
        #expect(finished.count >= 3)
        let finishedSidecars = try finished.map {
            try Data(contentsOf: URL(fileURLWithPath: "\(out)/\($0.directory)/fieldcap.json"))
        }
        // A segment made ready after the last one the index lists (a kill before the index
        // listed it): an empty frame log only, as the recorder makes one; and one past it that
        // holds a file of the user's, which stays.
        let last = try #require(before.segments.map(\.number).max())
        let orphan = String(format: "%08d-20261129T000000Z", last + 1)
        let users = String(format: "%08d-20261129T000001Z", last + 2)
        for name in [orphan, users] {
            try FileManager.default.createDirectory(atPath: "\(out)/\(name)", withIntermediateDirectories: true)
        }
        try Data().write(to: URL(fileURLWithPath: "\(out)/\(orphan)/\(before.streams[0].id).frames.ndjson"))
        try Data("mine".utf8).write(to: URL(fileURLWithPath: "\(out)/\(users)/notes.txt"))
        let result = try FieldcapProcess.run(["recover", out])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.contains("\(orphan): made ready but not yet in the index"), "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: "\(out)/\(orphan)"))
        #expect(FileManager.default.fileExists(atPath: "\(out)/\(users)/notes.txt"))
        try FileManager.default.removeItem(atPath: "\(out)/\(users)")
        let after = try #require(RecordingIndex.read(directory: out))
        #expect(after.state == "recovered")
        #expect(after.segments.allSatisfy { $0.state == .complete || $0.state == .recovered })
        #expect(after.segments.contains { $0.state == .recovered })
        #expect(after.segments.map(\.number) == Array(1...after.segments.count))
        // The finished segments were not touched.
        for (segment, sidecar) in zip(finished, finishedSidecars) {
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(out)/\(segment.directory)/fieldcap.json")) == sidecar)
        }
        #expect(try FieldcapProcess.run(["validate", out]).status == 0)
        // A second recover finds nothing to do.
        #expect(try FieldcapProcess.run(["recover", out]).stdout.contains("nothing to recover"))
    }

    @Test("a complete session and a directory fieldcap did not record are left untouched")
    func healthyAndForeign() throws {
        let out = freshPath("recover-healthy")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let recorded = try FieldcapProcess.run([
            "--cam", "synthetic:160x120@30", "--imu", "synthetic:200", "--duration", "1s", "--out", out, "-q",
        ])
        #expect(recorded.status == 0)
        let before = try SessionDamage.contents(out)
        let healthy = try FieldcapProcess.run(["recover", out])
        #expect(healthy.status == 0)
        #expect(healthy.stdout.contains("nothing to recover"))
        #expect(try SessionDamage.contents(out) == before)

        let foreign = try makeSession(streams: ["cam"])  // a SyncField session, not fieldcap's
        defer { try? FileManager.default.removeItem(atPath: foreign) }
        let foreignBefore = try SessionDamage.contents(foreign)
        let refused = try FieldcapProcess.run(["recover", foreign])
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("is not a fieldcap session"))
        #expect(try SessionDamage.contents(foreign) == foreignBefore)
        let missing = try FieldcapProcess.run(["recover", foreign + "-missing"])
        #expect(missing.status == 64)
    }
}
