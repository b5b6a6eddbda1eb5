import Foundation
import Testing

@testable import SyncField

@Suite("Session recovery")
struct SessionRecoveryTests {
    private func file(_ contents: [UInt8]) throws -> String {
        let path = NSTemporaryDirectory() + "/recovery-\(UUID().uuidString).jsonl"
        try Data(contents).write(to: URL(fileURLWithPath: path))
        return path
    }

    private let good =
        Array(#"{"capture_ns":1,"frame_number":0}"#.utf8) + [10] + Array(#"{"capture_ns":2,"frame_number":1}"#.utf8) + [
            10
        ]

    @Test("a partial last line is cut; complete lines stay byte for byte")
    func partialLine() throws {
        let path = try file(good + Array(#"{"capture_ns":3,"fra"#.utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let trim = try SessionRecovery.trimJSONLines(path: path)
        #expect(trim == SessionRecovery.Trim(keptLines: 2, cutBytes: 20))
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == good)
    }

    @Test("lines a power cut left damaged (zeros, old bytes) are cut with everything after them")
    func damagedTail() throws {
        let zeros = [UInt8](repeating: 0, count: 300) + [10]
        let path = try file(good + zeros + Array(#"{"capture_ns":9,"frame_number":2}"#.utf8) + [10])
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try SessionRecovery.trimJSONLines(path: path).keptLines == 2)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == good)
        let garbage = try file(good + Array("{\"capture_ns\":3,\"frame_number\":}\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: garbage) }
        #expect(try SessionRecovery.trimJSONLines(path: garbage) == SessionRecovery.Trim(keptLines: 2, cutBytes: 33))
    }

    @Test("a limit keeps only the first lines; a healthy file is untouched; a missing file is no lines")
    func limitsAndHealthy() throws {
        let path = try file(good)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try SessionRecovery.trimJSONLines(path: path) == SessionRecovery.Trim(keptLines: 2, cutBytes: 0))
        #expect(try SessionRecovery.trimJSONLines(path: path, limit: 5).keptLines == 2)
        #expect(
            try SessionRecovery.trimJSONLines(path: path, limit: 1) == SessionRecovery.Trim(keptLines: 1, cutBytes: 34))
        #expect(
            try SessionRecovery.trimJSONLines(path: path, limit: 0) == SessionRecovery.Trim(keptLines: 0, cutBytes: 34))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
        #expect(
            try SessionRecovery.trimJSONLines(path: path + ".missing")
                == SessionRecovery.Trim(keptLines: 0, cutBytes: 0))
    }

    @Test("lines written back are the writer's bytes, after the whole lines kept, and never through a symbolic link")
    func appendedLines() throws {
        let directory = TemporaryDirectory("recovery-append")
        let session = SyncSession(hostId: "rig_\"01/", outputDir: directory.path)
        try session.start()
        let values: [SessionRecovery.TimestampLine] = [
            .init(captureNs: 1_234_567_890_123, frameNumber: 0, uncertaintyNs: 5_000_000),
            .init(captureNs: 1_234_600_000_000, frameNumber: 1, uncertaintyNs: 1_042),
            .init(captureNs: UInt64.max, frameNumber: 2, uncertaintyNs: 0),
        ]
        for line in values {
            try session.stamp(
                "cam", frameNumber: line.frameNumber, uncertaintyNs: line.uncertaintyNs, captureNs: line.captureNs)
        }
        try session.stop()
        let written = try Data(contentsOf: URL(fileURLWithPath: directory.file("cam.timestamps.jsonl")))

        let path = directory.file("restored.jsonl")
        try Data(written.prefix { $0 != 10 } + [10] + Array("{\"capture_ns\":".utf8)).write(
            to: URL(fileURLWithPath: path))
        #expect(try SessionRecovery.trimJSONLines(path: path).keptLines == 1)
        try SessionRecovery.appendTimestampLines(Array(values.dropFirst()), to: path, hostId: "rig_\"01/")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == written)

        let missing = directory.file("new.jsonl")
        try SessionRecovery.appendTimestampLines(values, to: missing, hostId: "rig_\"01/")
        #expect(try Data(contentsOf: URL(fileURLWithPath: missing)) == written)

        let victim = directory.file("victim")
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: directory.file("link.jsonl"), withDestinationPath: victim)
        #expect(throws: SyncFieldError.self) {
            try SessionRecovery.appendTimestampLines(values, to: directory.file("link.jsonl"), hostId: "rig")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Data("precious\n".utf8))
    }
}

@Suite("Files stay inside the session")
struct SessionContainmentTests {
    @Test(
        "a symbolic link planted where a stream file goes is not written through, and recovery does not cut through one"
    )
    func symlinksNotFollowed() throws {
        let directory = NSTemporaryDirectory() + "/contain-\(UUID().uuidString)"
        let victim = NSTemporaryDirectory() + "/victim-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: victim)
        }
        let original = Data("precious\nline without end".utf8)
        try original.write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(
            atPath: "\(directory)/cam.timestamps.jsonl", withDestinationPath: victim)

        let session = SyncSession(hostId: "rig", outputDir: directory)
        try session.start()
        var refused = false
        do {
            for frame in 0..<3 { try session.stamp("cam", frameNumber: frame) }
            _ = try session.stop()
        } catch {
            refused = true
        }
        #expect(refused)
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == original)

        #expect(throws: SyncFieldError.self) {
            try SessionRecovery.trimJSONLines(path: "\(directory)/cam.timestamps.jsonl")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == original)
    }
}
