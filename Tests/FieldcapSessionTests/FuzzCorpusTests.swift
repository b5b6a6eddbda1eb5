import FieldcapMedia
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

/// Replays the fuzzers' corpora (Fuzz/corpus/session and Fuzz/corpus/matroska, grown by
/// scripts/fuzz) through validate and recover, as the fuzz targets do, so whatever once crashed
/// them stays fixed.
@Suite("Fuzz corpus")
struct FuzzCorpusTests {
    static let corpora = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus").path
    static let corpus = corpora + "/session"

    private func replay(_ name: String) throws -> (SessionFinisher.Outcome, String) {
        let directory = NSTemporaryDirectory() + "/fuzz-replay-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(Self.corpus)/\(name)")))
        FuzzSession.materialize(bytes, into: directory)
        _ = SessionValidator.validateWithVideos(directory: directory)
        return (try SessionFinisher.recover(directory: directory, say: { _ in }), directory)
    }

    @Test(
        "every corpus input goes through validate and recover without a crash; a refused recover changes nothing",
        arguments: ["session", "matroska"])
    func wholeCorpus(target: String) throws {
        let corpus = "\(Self.corpora)/\(target)"
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
        #expect(names.count >= 5)
        for name in names {
            let directory = NSTemporaryDirectory() + "/fuzz-replay-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(corpus)/\(name)")))
            if target == "session" {
                FuzzSession.materialize(bytes, into: directory)
            } else {
                // As Fuzz/MatroskaFuzzer.swift reads it.
                FuzzSession.materializeCamera(bytes, into: directory)
                _ = try? MatroskaScan(path: "\(directory)/cam.mkv")
                try? MatroskaFrames.forEachFrame(in: "\(directory)/cam.mkv") { _ in true }
            }
            _ = SessionValidator.validateWithVideos(directory: directory)
            let before = try SessionDamage.contents(directory)
            do {
                _ = try SessionFinisher.recover(directory: directory, say: { _ in })
            } catch let refusal as CameraRecovery.Refusal {
                // A video recover cannot account for: the session is left exactly as it was (#42).
                #expect(try SessionDamage.contents(directory) == before, "\(name): \(refusal)")
            }
        }
    }

    @Test(
        """
        the Matroska target's seeds: each recorded video in the fixed \
        killed session recovers valid and keeps its whole frames
        """,
        arguments: ["complete", "killed"].flatMap { kind in
            ["grey", "yuyv", "mjpg", "ffv1"].map { "seed-\(kind)-\($0)" }
        })
    func matroskaSeeds(name: String) throws {
        let directory = NSTemporaryDirectory() + "/fuzz-seed-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(Self.corpora)/matroska/\(name)")))
        FuzzSession.materializeCamera(bytes, into: directory)
        let before = try MatroskaScan(path: "\(directory)/cam.mkv").frames.count
        #expect(before > 3, "\(name): the seed holds frames")
        guard case .recovered(let report) = try SessionFinisher.recover(directory: directory, say: { _ in }) else {
            Issue.record("\(name): not recovered")
            return
        }
        #expect(report.isValid, "\(name): \(report.problems)")
        let after = try MatroskaScan(path: "\(directory)/cam.mkv").frames.count
        // A killed video may end in a frame cut short; a complete one keeps every frame.
        #expect(name.contains("complete") ? after == before : after >= before - 1, "\(name): \(before) -> \(after)")
    }

    @Test(
        """
        the seeds: a complete session is left alone, killed ones recover \
        into valid sessions, wrong types are reported, not hidden
        """,
        arguments: [
            "seed-complete", "seed-killed", "seed-killed-partial-lines", "seed-truncated-video", "seed-wrong-types",
            "seed-away", "seed-sync-check",
        ])
    func seeds(name: String) throws {
        let (outcome, directory) = try replay(name)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        switch (name, outcome) {
        case ("seed-complete", .alreadyValid), ("seed-away", .alreadyValid), ("seed-sync-check", .alreadyValid): break
        case ("seed-wrong-types", .recovered(let report)):
            // A frame_number written as a string is whole JSON: recovery keeps it, and says so.
            #expect(
                !report.isValid && report.problems.contains { "\($0)".contains("frame_number") }, "\(report.problems)")
        case (let seed, .recovered(let report)) where seed.hasPrefix("seed-killed") || seed == "seed-truncated-video":
            #expect(report.isValid, "\(name): \(report.problems)")
        default:
            Issue.record("\(name): unexpected outcome \(outcome)")
        }
    }

    @Test("the away seed: its camera's 3 s hole is documented by its away entry, and a problem without it")
    func awaySeed() throws {
        let directory = NSTemporaryDirectory() + "/fuzz-away-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(Self.corpus)/seed-away")))
        FuzzSession.materialize(bytes, into: directory)
        #expect(SessionValidator.validateWithVideos(directory: directory).problems == [])
        let sidecar = "\(directory)/fieldcap.json"
        var document = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sidecar))) as? [String: Any])
        var streams = try #require(document["streams"] as? [[String: Any]])
        streams[0]["away"] = nil
        document["streams"] = streams
        try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: sidecar))
        let problems = SessionValidator.validateWithVideos(directory: directory).problems.map(\.description)
        #expect(problems.count == 1)
        #expect(
            problems.first?.hasPrefix("cam.timestamps.jsonl:6: stream cam has no record for 3.") == true, "\(problems)")
    }
}
