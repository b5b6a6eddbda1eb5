import FieldcapSegments
import Foundation
import SyncField
import Testing

@Suite("fieldcap sessions and fieldcap extract")
struct SessionsAndExtractCommandTests {
    /// Every file under `path` and its bytes: what "nothing changed" compares.
    static func tree(_ path: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: path) else { return files }
        for case let name as String in walker {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: "\(path)/\(name)", isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(name)"))
            }
        }
        return files
    }

    static func entries(_ root: String) throws -> [[String: Any]] {
        let listed = try FieldcapProcess.run(["sessions", root, "--json"])
        #expect(listed.status == 0, "\(listed.stderr)")
        return try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as! [[String: Any]]
    }

    @Test("a live recording is listed as recording, and recover and rm leave it alone")
    func liveRecording() throws {
        let root = freshPath("sessions-live")
        defer { try? FileManager.default.removeItem(atPath: root) }
        _ = try FieldcapProcess.run([
            "--cam", "synthetic:64x48@30", "--imu", "synthetic:100", "--segment", "1s", "--root", root, "--host-id",
            "rig", "-q",
        ]) { process in
            let deadline = Date().addingTimeInterval(30)
            var name: String?
            while Date() < deadline, name == nil {
                usleep(50_000)
                name = try? FileManager.default.contentsOfDirectory(atPath: root).first {
                    FileManager.default.fileExists(atPath: "\(root)/\($0)/\(RecordingIndex.fileName)")
                }
            }
            defer { kill(process.processIdentifier, SIGINT) }
            guard let name else {
                Issue.record("no recording appeared under \(root)")
                return
            }
            usleep(1_500_000)
            let live = try? Self.entries(root)
            #expect(live?.first?["state"] as? String == "recording", "\(String(describing: live))")
            let recover = try? FieldcapProcess.run(["recover", "\(root)/\(name)"])
            #expect(recover?.status == 75, "\(recover?.stdout ?? "") \(recover?.stderr ?? "")")
            #expect(recover?.stderr.contains("is being recorded right now") == true)
            let rm = try? FieldcapProcess.run(["sessions", "rm", "--root", root, name])
            #expect(rm?.status == 1)
            #expect(rm?.stderr.contains("being recorded right now: not deleted") == true, "\(rm?.stderr ?? "")")
            #expect(FileManager.default.fileExists(atPath: "\(root)/\(name)"))
        }
        let after = try Self.entries(root)
        #expect(after.count == 1)
        #expect(after.first?["state"] as? String == "complete", "\(after)")
        #expect(after.first?["note"] as? String == "stopped by SIGINT")
    }

    @Test("sessions lists, extract takes a range across segments, rm deletes what it is told")
    func listExtractRemove() throws {
        let root = freshPath("sessions-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recording = "\(root)/long"
        let recorded = try FieldcapProcess.run([
            "--cam", "synthetic:64x48@30", "--imu", "synthetic:200", "--segment", "1s", "--duration", "3.6s", "--out",
            recording, "--host-id", "rig", "-q",
            // A feed no program feeds: a stream with nothing in any segment, which extract passes over.
            "--sensor", "feed:idle,socket=\(freshPath("idle")).sock",
        ])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let short = try FieldcapProcess.run([
            "--imu", "synthetic:200", "--duration", "500ms", "--out", "\(root)/short", "--host-id", "rig", "-q",
        ])
        #expect(short.status == 0, "\(short.stderr)")

        let table = try FieldcapProcess.run(["sessions", root])
        #expect(table.status == 0)
        #expect(table.stdout.contains("long") && table.stdout.contains("segments:"), "\(table.stdout)")
        #expect(table.stdout.contains("short") && table.stdout.contains("complete"), "\(table.stdout)")
        #expect(table.stdout.contains("2 entries"), "\(table.stdout)")

        let index = try #require(RecordingIndex.read(directory: recording))
        try #require(index.segments.count >= 3)
        // From half a second into the first segment to half a second into the third.
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func halfIn(_ segment: RecordingIndex.Segment) throws -> String {
            let start = try #require(parser.date(from: segment.startUtc))
            return SyncPoint.isoDatetime(wallClockNs: UInt64((start.timeIntervalSince1970 + 0.5) * 1e9))
        }
        let from = try halfIn(index.segments[0])
        let to = try halfIn(index.segments[2])
        let clip = "\(root)/clip"
        let extracted = try FieldcapProcess.run(["extract", recording, "--from", from, "--to", to, "--out", clip])
        #expect(extracted.status == 0, "\(extracted.stdout) \(extracted.stderr)")
        #expect(extracted.stdout.contains("valid SyncField 0.1 session from 3 segments"), "\(extracted.stdout)")
        #expect(try FieldcapProcess.run(["validate", clip]).status == 0)

        // Bad input: one line, exit status, nothing written.
        let before = try Self.tree(root)
        let backwards = try FieldcapProcess.run([
            "extract", recording, "--from", to, "--to", from, "--out", "\(root)/x",
        ])
        #expect(backwards.status == 64)
        #expect(backwards.stderr.hasPrefix("Error: --to ") && backwards.stderr.split(separator: "\n").count == 1)
        let unreadable = try FieldcapProcess.run([
            "extract", recording, "--from", "at two", "--to", to, "--out", "\(root)/x",
        ])
        #expect(unreadable.status == 64 && unreadable.stderr.contains("--from at two is not a time"))
        let outside = try FieldcapProcess.run([
            "extract", recording, "--from", "2001-01-01T00:00:00Z", "--to", "2001-01-01T00:01:00Z", "--out",
            "\(root)/x",
        ])
        #expect(outside.status == 1 && outside.stderr.contains("is outside the recording"), "\(outside.stderr)")
        let usage = try FieldcapProcess.run(["sessions", "rm", "--root", root])
        #expect(usage.status == 64)
        let refused = try FieldcapProcess.run(["sessions", "rm", "--root", root, "short", "no-such"])
        #expect(refused.status == 1 && refused.stderr.contains("no-such: no such directory"))
        #expect(refused.stderr.contains("nothing deleted"))
        let dry = try FieldcapProcess.run(["sessions", "rm", "--root", root, "--older-than", "1m", "--dry-run"])
        #expect(dry.status == 0)
        #expect(try Self.tree(root) == before, "bad input changed the root")

        let segment = "long/\(index.segments[0].directory)"
        let removed = try FieldcapProcess.run(["sessions", "rm", "--root", root, "short", segment])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdout.contains("deleted short") && removed.stdout.contains("deleted \(segment)"))
        #expect(!FileManager.default.fileExists(atPath: "\(root)/short"))
        #expect(RecordingIndex.read(directory: recording)?.segments[0].state == .deleted)
        // validate says who deleted the segment, not "its storage budget" (#42).
        let validated = try FieldcapProcess.run(["validate", recording])
        #expect(validated.status == 0)
        #expect(validated.stdout.contains(", 1 deleted (1 by fieldcap sessions rm)"), "\(validated.stdout)")
        let left = try Self.entries(root).compactMap { $0["name"] as? String }
        #expect(Set(left) == ["long", "clip"])
    }
}
