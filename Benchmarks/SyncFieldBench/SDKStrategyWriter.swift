import Foundation
import SyncField

/// What the SyncField Swift SDK 0.1 does on every `record()`, reproduced as a baseline: read the
/// clock, take one process-wide lock, serialise each line with `JSONSerialization`, and issue one
/// unbuffered `write(2)` per line through `FileHandle`.
final class SDKStrategyWriter: @unchecked Sendable {
    private let lock = NSLock()
    private let directory: String
    private let hostId: String
    private var timestampHandles: [String: FileHandle] = [:]
    private var sensorHandles: [String: FileHandle] = [:]

    init(hostId: String, directory: String) {
        self.hostId = hostId
        self.directory = directory
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    private func handle(_ path: String, in table: inout [String: FileHandle], key: String) throws -> FileHandle {
        if let existing = table[key] { return existing }
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        table[key] = handle
        return handle
    }

    private static func line(_ object: [String: Any]) throws -> Data {
        var data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        data.append(0x0A)
        return data
    }

    @discardableResult
    func record(_ streamId: String, frameNumber: Int, channels: [String: Any]) throws -> UInt64 {
        let ns = MonotonicClock.now()
        lock.lock()
        defer { lock.unlock() }
        let timestamp: [String: Any] = [
            "frame_number": frameNumber, "capture_ns": ns, "clock_source": "host_monotonic",
            "clock_domain": hostId, "uncertainty_ns": UInt64(5_000_000),
        ]
        var sample = timestamp
        sample["channels"] = channels
        let timestamps = try handle("\(directory)/\(streamId).timestamps.jsonl", in: &timestampHandles, key: streamId)
        try timestamps.write(contentsOf: Self.line(timestamp))
        let sensor = try handle("\(directory)/\(streamId).jsonl", in: &sensorHandles, key: streamId)
        try sensor.write(contentsOf: Self.line(sample))
        return ns
    }

    func close() throws {
        lock.lock()
        defer { lock.unlock() }
        for handle in timestampHandles.values { try handle.close() }
        for handle in sensorHandles.values { try handle.close() }
    }
}
