import FieldcapCore
import FieldcapFeeds
import FieldcapSystem
import Foundation
import SyncField
import Testing

private func temporaryPath(_ label: String) -> String {
    NSTemporaryDirectory() + "/\(label)-\(UUID().uuidString)"
}

/// A program feeding a socket, as the README's clients do: connect, send lines, close.
private final class Feeder {
    let socket: StreamSocket

    init(path: String) throws {
        socket = try StreamSocket.connect(to: path).get()
    }

    func send(_ text: String) {
        let failed = Array(text.utf8).withUnsafeBytes { socket.send($0) }
        #expect(failed == nil, "send: \(String(describing: failed))")
    }

    /// What the recording wrote back (a refusal), waiting up to a second.
    func reply() -> String {
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        _ = StreamSocket.poll(&descriptors, timeoutMs: 1000)
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { (try? socket.receive(into: $0).get()) ?? 0 }
        return String(decoding: bytes[..<count], as: UTF8.self)
    }

    func close() { socket.close() }
}

/// A recording of `sources` into a SyncField session at `path`, stopped after `body`.
private func record(
    _ sources: [CaptureSource], at path: String, options: Recorder.Options = Recorder.Options(),
    queueCapacity: Int = 4096, fullWaits: UnsafeMutablePointer<Int>? = nil, _ body: () throws -> Void
) throws -> [Recorder.StreamSummary] {
    var sessionOptions = SyncSession.Options()
    sessionOptions.queueCapacity = queueCapacity
    let session = SyncSession(hostId: "rig", outputDir: path, options: sessionOptions)
    try session.start()
    let recorder = Recorder(sources: sources, sink: SyncSessionSink(session: session), options: options)
    try recorder.start()
    try body()
    // The reader takes what arrived before the stop: give the last lines a moment to be read.
    usleep(200_000)
    let summary = try recorder.stop()
    fullWaits?.pointee = session.queueFullWaits
    return summary
}

private func waitUntil(_ condition: () -> Bool) {
    for _ in 0..<200 where !condition() { usleep(10_000) }
}

@Suite("a stream fed by a local program", .serialized)
struct FeedSourceTests {
    @Test("the session's files hold the bytes the SDK's record() writes for the same values")
    func sameBytesAsTheSDK() throws {
        let fed = temporaryPath("feed-bytes")
        let direct = temporaryPath("sdk-bytes")
        defer {
            try? FileManager.default.removeItem(atPath: fed)
            try? FileManager.default.removeItem(atPath: direct)
        }
        let socketPath = fed + ".sock"
        let feed = try FeedSource(id: "grip", name: "grip", options: FeedSource.Options(socketPath: socketPath))
        var times: [UInt64] = []
        _ = try record([feed], at: fed) {
            let feeder = try Feeder(path: socketPath)
            for index in 0..<5 {
                let now = MonotonicClock.now()
                times.append(now)
                feeder.send(
                    #"{"capture_ns":\#(now),"uncertainty_ns":\#(1000 + index),"channels":{"force":[1.5,-2.0,3e-9,\#(index)],"#
                        + #""joints":{"wrist":[0.1,0.2],"thumb":{"tip":-0.0}},"count":7,"big":18446744073709551615,"#
                        + #""grid":[[0.1,0.2],[0.3,0.4]],"zero":0.0}}"# + "\n")
            }
            feeder.close()
        }
        let session = SyncSession(hostId: "rig", outputDir: direct)
        try session.start()
        for (index, now) in times.enumerated() {
            try session.record(
                "grip", frameNumber: index,
                channels: [
                    "force": [1.5, -2.0, 3e-9, Double(index)].enumerated().map {
                        $0.offset == 3 ? index as Any : $0.element
                    },
                    "joints": ["wrist": [0.1, 0.2], "thumb": ["tip": -0.0] as [String: Any]] as [String: Any],
                    "count": 7, "big": UInt64.max, "grid": [[0.1, 0.2], [0.3, 0.4]], "zero": 0.0,
                ], uncertaintyNs: UInt64(1000 + index), captureNs: now)
        }
        try session.stop()
        for file in ["grip.jsonl", "grip.timestamps.jsonl"] {
            let fedBytes = try Data(contentsOf: URL(fileURLWithPath: "\(fed)/\(file)"))
            let directBytes = try Data(contentsOf: URL(fileURLWithPath: "\(direct)/\(file)"))
            #expect(fedBytes.count > 0)
            #expect(fedBytes == directBytes, "\(file):\n\(String(decoding: fedBytes, as: UTF8.self))")
        }
        #expect(SessionValidator.validate(directory: fed).problems.isEmpty)
    }

    @Test("lines without capture_ns are stamped on arrival; bad lines are counted by reason, never fatal")
    func stampsAndRefusals() throws {
        let path = temporaryPath("feed-refusals")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let socketPath = path + ".sock"
        var options = FeedSource.Options(socketPath: socketPath)
        options.pinned = ["a"]
        let told = Told()
        options.told = { told.add($0) }
        let feed = try FeedSource(id: "f", name: "f", options: options)
        var before: UInt64 = 0
        var after: UInt64 = 0
        let summary = try record([feed], at: path) {
            let feeder = try Feeder(path: socketPath)
            before = MonotonicClock.now()
            feeder.send(#"{"channels":{"a":1}}"# + "\n")
            waitUntil { feed.report.details?["records"]?.intValue == 1 }
            after = MonotonicClock.now()
            let now = MonotonicClock.now()
            feeder.send(
                "garbage\n" + #"{"channels":{"a":"x"}}"# + "\n" + #"{"channels":{"b":1}}"# + "\n"
                    + #"{"channels":{"a":2},"capture_ns":\#(now)}"# + "\n"
                    + #"{"channels":{"a":3},"capture_ns":\#(now - 1)}"# + "\n"
                    + #"{"channels":{"a":4},"capture_ns":1}"# + "\n"
                    + #"{"channels":{"a":5},"capture_ns":\#(now + 60_000_000_000)}"# + "\n" + "\r\n\n"
                    + #"{"channels":{"a":6}}"# + "\n")
            // A line longer than any: refused whole, and the next one is read.
            feeder.send(#"{"channels":{"a":"# + String(repeating: "1", count: 70_000) + "}}\n")
            feeder.send(#"{"channels":{"a":7}}"# + "\n")
            waitUntil { feed.report.details?["records"]?.intValue == 4 }
            feeder.close()
        }
        #expect(summary[0].written == 4)
        let details = try #require(feed.report.details)
        let rejected = try #require(details["rejected"]?.objectValue)
        #expect(rejected["not_json"]?.intValue == 2)
        #expect(rejected["not_numeric"]?.intValue == 1)
        #expect(rejected["schema"]?.intValue == 1)
        #expect(rejected["outside_session"]?.intValue == 2)
        #expect(rejected["backwards"]?.intValue == 1)
        #expect(details["stamped"]?["on_arrival"]?.intValue == 3)
        #expect(details["stamped"]?["by_program"]?.intValue == 1)
        #expect(details["first_problems"]?.arrayValue?.count == 5)
        #expect(told.lines.count == 5)
        #expect(told.lines.first?.hasPrefix("line 2 refused (not_json)") == true, "\(told.lines)")
        let stamps = try String(contentsOfFile: "\(path)/f.timestamps.jsonl", encoding: .utf8)
            .split(separator: "\n").map { try #require(JSONValue.parse(Array($0.utf8))) }
        let first = try #require(stamps.first?["capture_ns"]?.unsignedValue)
        #expect(first >= before && first <= after)
        #expect(stamps.map { $0["uncertainty_ns"]?.intValue } == [5_000_000, 5_000_000, 5_000_000, 5_000_000])
        let values = try String(contentsOfFile: "\(path)/f.jsonl", encoding: .utf8).split(separator: "\n")
            .map { try #require(JSONValue.parse(Array($0.utf8))?["channels"]?["a"]?.intValue) }
        #expect(values == [1, 2, 6, 7])
    }

    @Test("a second program is refused with a line saying why; one that reconnects continues the stream")
    func secondProgramAndReconnect() throws {
        let path = temporaryPath("feed-reconnect")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let socketPath = path + ".sock"
        let feed = try FeedSource(id: "f", name: "f", options: FeedSource.Options(socketPath: socketPath))
        let summary = try record([feed], at: path) {
            let first = try Feeder(path: socketPath)
            first.send(#"{"channels":{"a":1}}"# + "\n")
            let second = try Feeder(path: socketPath)
            #expect(second.reply().contains("already has a program feeding it"))
            second.close()
            waitUntil { feed.report.details?["records"]?.intValue == 1 }
            first.close()
            waitUntil { feed.presence?.isAway == true }
            let again = try Feeder(path: socketPath)
            again.send(#"{"channels":{"a":2}}"# + "\n")
            waitUntil { feed.report.details?["records"]?.intValue == 2 }
            again.close()
        }
        #expect(summary[0].written == 2)
        #expect(summary[0].captureError == nil, "a feed is not ended by its program leaving")
        #expect(summary[0].absences.count == 2)
        #expect(summary[0].absences.first?.returnedNs != nil)
        #expect(summary[0].absences.first?.reason == "the program feeding it disconnected")
        #expect(feed.report.details?["programs_refused"]?.intValue == 1)
        #expect(feed.report.details?["connections"]?.intValue == 2)
        let lines = try String(contentsOfFile: "\(path)/f.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2 && lines[1].contains(#""frame_number":1"#))
    }

    @Test("a flooding program loses its own records, never an IMU's")
    func floodDropsOnlyItsOwn() throws {
        let path = temporaryPath("feed-flood")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let socketPath = path + ".sock"
        var options = FeedSource.Options(socketPath: socketPath)
        // Few slots, and writers that sleep 50 ms when idle: the feed outruns them at once.
        options.slots = 32
        let feed = try FeedSource(id: "f", name: "f", options: options)
        let imu = SyntheticIMU(id: "imu", rate: 1000)
        var recorderOptions = Recorder.Options()
        recorderOptions.idlePollNs = 50_000_000
        var sent = 0
        var fullWaits = -1
        let summary = try record(
            [feed, imu], at: path, options: recorderOptions, queueCapacity: 256, fullWaits: &fullWaits
        ) {
            let feeder = try Feeder(path: socketPath)
            let start = MonotonicClock.now()
            var batch = ""
            for index in 0..<64 { batch += #"{"channels":{"a":\#(index),"b":[1,2,3]}}"# + "\n" }
            while MonotonicClock.now() - start < 1_000_000_000 {
                feeder.send(batch)
                sent += 64
            }
            feeder.close()
        }
        let fed = summary[0]
        let imuSummary = summary[1]
        #expect(imuSummary.dropped == 0 && imuSummary.encoderDropped == 0)
        // The IMU's lines never waited for the session's queue: the feed left it half free.
        #expect(fullWaits == 0)
        #expect(imuSummary.written >= 900)
        let details = try #require(feed.report.details)
        let accepted = try #require(details["records"]?.intValue)
        #expect(fed.dropped > 0, "the feed outran its slots")
        #expect(fed.written + fed.dropped + fed.encoderDropped == accepted)
        #expect(accepted == sent)
        #expect(SessionValidator.validate(directory: path).problems.isEmpty)
    }

    @Test("a socket another recording listens at is refused; one left by a process that ended is replaced")
    func socketInUse() throws {
        let socketPath = temporaryPath("feed-busy") + ".sock"
        let first = try FeedSource(id: "f", name: "f", options: FeedSource.Options(socketPath: socketPath))
        #expect(throws: DeviceError.self) {
            _ = try FeedSource(id: "f", name: "f", options: FeedSource.Options(socketPath: socketPath))
        }
        // A stale socket file: bound and closed without unlinking.
        let stalePath = temporaryPath("feed-stale") + ".sock"
        let stale = try StreamSocket.listen(at: stalePath).get()
        stale.close()
        let replaced = try FeedSource(id: "g", name: "g", options: FeedSource.Options(socketPath: stalePath))
        let probe = try StreamSocket.connect(to: stalePath).get()
        probe.close()
        _ = replaced
        // The first feed's socket is left as it was: the second was refused by the lock, never
        // by connecting to it (which the first would have counted as its program).
        #expect(first.report.details?["connections"]?.intValue == 0)
        // Not a socket: left alone.
        let filePath = temporaryPath("feed-file")
        FileManager.default.createFile(atPath: filePath, contents: Data("keep".utf8))
        defer { try? FileManager.default.removeItem(atPath: filePath) }
        #expect(throws: DeviceError.self) {
            _ = try FeedSource(id: "h", name: "h", options: FeedSource.Options(socketPath: filePath))
        }
        #expect(try String(contentsOfFile: filePath, encoding: .utf8) == "keep")
    }
}

private final class Told: @unchecked Sendable {
    private let lock = NSLock()
    private var kept: [String] = []
    func add(_ line: String) { lock.withLock { kept.append(line) } }
    var lines: [String] { lock.withLock { kept } }
}
