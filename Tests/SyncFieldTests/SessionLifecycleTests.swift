import Foundation
import Testing

@testable import SyncField

@Suite("Session lifecycle and errors")
struct SessionLifecycleTests {
    @Test("calls before start and after stop throw sessionNotStarted; a second start throws")
    func stateErrors() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.url)
        #expect(throws: SyncFieldError.sessionNotStarted) { try session.stamp("cam", frameNumber: 0) }
        #expect(throws: SyncFieldError.sessionNotStarted) { try session.stop() }
        try session.start()
        #expect(throws: SyncFieldError.sessionAlreadyStarted) { try session.start() }
        try session.stamp("cam", frameNumber: 0)
        try session.stop()
        #expect(throws: SyncFieldError.sessionNotStarted) { try session.stamp("cam", frameNumber: 1) }
        #expect(throws: SyncFieldError.sessionNotStarted) {
            try session.record("imu", frameNumber: 1, channels: ["a": 1.0])
        }
        #expect(directory.lines("cam.timestamps.jsonl").count == 1)
        #expect(!directory.exists("imu.timestamps.jsonl"))
    }

    @Test("a session restarts after stop and each run rewrites its files, as the SDK does")
    func restart() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        let first = try session.start()
        for frame in 0..<5 { try session.stamp("cam", frameNumber: frame) }
        try session.record("imu", frameNumber: 0, channels: ["x": 1])
        #expect(try session.stop() == ["cam": 5, "imu": 1])
        let second = try session.start()
        #expect(second.monotonicNs > first.monotonicNs)
        for frame in 0..<3 { try session.stamp("cam", frameNumber: frame) }
        #expect(try session.stop() == ["cam": 3])
        #expect(directory.lines("cam.timestamps.jsonl").count == 3)
        let manifest = try #require(directory.read("manifest.json"))
        #expect(!manifest.contains("imu"))
        #expect(session.syncPoint == second)
    }

    @Test("stamp returns the capture time it wrote, read from CLOCK_MONOTONIC_RAW when not given")
    func stampReturnsCaptureTime() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        let before = MonotonicClock.now()
        let written = try session.stamp("cam", frameNumber: 0)
        let after = MonotonicClock.now()
        #expect(before <= written && written <= after)
        #expect(try session.stamp("cam", frameNumber: 1, uncertaintyNs: 7, captureNs: 99) == 99)
        try session.stop()
        let lines = directory.lines("cam.timestamps.jsonl")
        #expect(lines[0].hasPrefix("{\"capture_ns\":\(written),"))
        #expect(
            lines[1]
                == #"""
                {"capture_ns":99,"clock_domain":"h","clock_source":"host_monotonic",\#
                "frame_number":1,"uncertainty_ns":7}
                """#
        )
    }

    @Test(
        "NaN or infinity anywhere in the channels throws and writes nothing",
        arguments: [
            Double.nan, Double.infinity, -Double.infinity,
        ])
    func nonFiniteWritesNothing(bad: Double) throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        try session.record("imu", frameNumber: 0, channels: ["a": 1.0])
        let cases: [[String: Any]] = [
            ["a": bad], ["a": 1.0, "deep": ["x": [1.0, bad]]], ["arr": [[1.0], [bad]]], ["f": Float(bad)],
        ]
        for channels in cases {
            #expect(throws: SyncFieldError.self) { try session.record("imu", frameNumber: 1, channels: channels) }
            #expect(throws: SyncFieldError.self) { try session.record("fresh", frameNumber: 0, channels: channels) }
        }
        let fixed = try session.sensorStream("fixed", channels: ["x", "y"])
        #expect(throws: SyncFieldError.self) { try fixed.record(frameNumber: 0, values: [1, bad]) }
        #expect(try session.stop() == ["imu": 1])
        #expect(directory.lines("imu.timestamps.jsonl").count == 1)
        #expect(directory.lines("imu.jsonl").count == 1)
        #expect(!directory.exists("fresh.jsonl") && !directory.exists("fresh.timestamps.jsonl"))
        #expect(!directory.exists("fixed.jsonl"))
    }

    @Test("values that are not numbers are refused with the channel's path")
    func nonNumbersRefused() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        do {
            try session.record("imu", frameNumber: 0, channels: ["a": ["b": ["c", "d"]]])
            Issue.record("a string leaf was accepted")
        } catch let error as SyncFieldError {
            #expect(error.description.contains("a.b.0"))
        }
        #expect(throws: SyncFieldError.self) { try session.record("imu", frameNumber: 0, channels: ["flag": true]) }
        try session.stop()
    }

    @Test(
        "stream ids that are not a plain file name are refused and nothing is written outside",
        arguments: [
            "", "/", "a/b", "../escape", "..", ".", ".hidden", "nul\u{0}byte", "new\nline", "tab\t", "del\u{7F}",
            String(repeating: "x", count: 239),
        ])
    func unsafeStreamIds(id: String) throws {
        let parent = TemporaryDirectory()
        let directory = parent.file("session")
        let session = SyncSession(hostId: "h", outputDir: directory)
        try session.start()
        do {
            try session.stamp(id, frameNumber: 0)
            Issue.record("stream id \(id.debugDescription) was accepted")
        } catch let error as SyncFieldError {
            guard case .invalidStreamId = error else { Issue.record("wrong error \(error)"); return }
            #expect(!error.description.contains("\n"))
        }
        #expect(throws: SyncFieldError.self) { try session.record(id, frameNumber: 0, channels: ["a": 1]) }
        #expect(throws: SyncFieldError.self) { _ = try session.sensorStream(id, channels: ["a"]) }
        try session.stop()
        let written = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(written == ["manifest.json", "sync_point.json"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path) == ["session"])
    }

    @Test("ids that only look odd are fine file names", arguments: ["cam.left", "a..b", "ünï-cödé", "cam 1", "-x"])
    func oddButSafeIds(id: String) throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        try session.stamp(id, frameNumber: 0)
        #expect(try session.stop() == [id: 1])
        #expect(directory.exists("\(id).timestamps.jsonl"))
    }

    @Test("link() adds the path to the manifest; a linked-only stream is a video without timestamps")
    func links() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        try session.stamp("cam", frameNumber: 0)
        session.link("cam", path: "/data/cam.mp4")
        session.link("other", path: "/data/other.mp4")
        #expect(try session.stop() == ["cam": 1])
        let manifest = try #require(directory.read("manifest.json"))
        let expected = SessionManifest(
            hostId: "h", timestampCounts: ["cam": 1], recorded: [],
            links: ["cam": "/data/cam.mp4", "other": "/data/other.mp4"])
        #expect(manifest == String(decoding: expected.jsonValue.sdkPrettyBytes(), as: UTF8.self))
        #expect(manifest.contains(#""other": {"# + "\n" + #"      "path": "\/data\/other.mp4","#))
    }

    @Test("a stream both stamped and recorded is a sensor whose timestamps file holds both")
    func mixedStream() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        try session.stamp("s", frameNumber: 0, captureNs: 1)
        try session.record("s", frameNumber: 1, channels: ["v": 2], captureNs: 2)
        #expect(try session.stop() == ["s": 2])
        #expect(directory.lines("s.timestamps.jsonl").count == 2)
        #expect(directory.lines("s.jsonl").count == 1)
        #expect(directory.read("manifest.json")!.contains(#""type": "sensor""#))
    }

    @Test("the sync point pairs the two clocks tightly and is written at stop")
    func syncPointFile() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        let wallBefore = MonotonicClock.wallClockNs()
        let point = try session.start()
        let wallAfter = MonotonicClock.wallClockNs()
        #expect(point.wallClockNs >= wallBefore && point.wallClockNs <= wallAfter)
        #expect(point.timestampMs == point.wallClockNs / 1_000_000)
        #expect(!directory.exists("sync_point.json"))
        try session.stop()
        #expect(directory.read("sync_point.json") == String(decoding: point.jsonValue.sdkPrettyBytes(), as: UTF8.self))
    }

    @Test("lines reach the file within the sync interval, without stop(), however long the writer's idle sleep")
    func durabilityWindow() throws {
        let directory = TemporaryDirectory()
        var options = SyncSession.Options()
        options.syncInterval = 0.2
        options.idlePollNs = 60_000_000_000
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        for frame in 0..<10 { try session.stamp("cam", frameNumber: frame) }
        try session.record("imu", frameNumber: 0, channels: ["a": 1])
        // Bounded wait, not a timing assertion: the lines must appear well before the deadline.
        let deadline = MonotonicClock.now() + 10_000_000_000
        while (directory.lines("cam.timestamps.jsonl").count < 10 || directory.lines("imu.jsonl").count < 1)
            && MonotonicClock.now() < deadline
        {
            usleep(20_000)
        }
        #expect(directory.lines("cam.timestamps.jsonl").count == 10)
        #expect(directory.lines("imu.jsonl").count == 1)
        try session.stop()
    }

    @Test("stop() ends an idle writer's sleep instead of waiting it out")
    func stopWakesTheWriter() throws {
        let directory = TemporaryDirectory()
        var options = SyncSession.Options()
        options.idlePollNs = 60_000_000_000
        options.syncInterval = 60
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        try session.stamp("cam", frameNumber: 0)
        usleep(50_000)  // the writer has drained the queue and sleeps
        let started = MonotonicClock.now()
        try session.stop()
        // Bounded, not a timing assertion: a writer that slept on would take 60 s.
        #expect(MonotonicClock.now() - started < 20_000_000_000)
        #expect(directory.lines("cam.timestamps.jsonl").count == 1)
    }

    @Test("the writer's idle sleep fitted to a rate: a quarter of the queue, from 10 ms to 500 ms")
    func idleSleepForRate() {
        var options = SyncSession.Options()
        options.queueCapacity = 4096
        #expect(options.idlePollNs(forEntriesPerSecond: 30) == 500_000_000)
        #expect(options.idlePollNs(forEntriesPerSecond: 4000) == 256_000_000)
        #expect(options.idlePollNs(forEntriesPerSecond: 1_000_000) == 10_000_000)
        #expect(options.idlePollNs(forEntriesPerSecond: 0) == 500_000_000)
    }

    @Test("the output directory is created with its parents; one that cannot be is a clear error")
    func outputDirectory() throws {
        let parent = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: parent.file("a/b/c"))
        try session.start()
        try session.stop()
        #expect(FileManager.default.fileExists(atPath: parent.file("a/b/c/manifest.json")))
        FileManager.default.createFile(atPath: parent.file("plain"), contents: Data("x".utf8))
        let blocked = SyncSession(hostId: "h", outputDir: parent.file("plain/sub"))
        #expect(throws: SyncFieldError.self) { try blocked.start() }
        #expect(throws: SyncFieldError.sessionNotStarted) { try blocked.stamp("cam", frameNumber: 0) }
    }
}
