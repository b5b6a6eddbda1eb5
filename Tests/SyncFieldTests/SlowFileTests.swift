import FieldcapOutput
import Foundation
import Synchronization
import Testing

@testable import SyncField

/// Makes the syncs of one file hang, once, until released: a file on a slow or stalled disk.
final class HangingSync: Sendable {
    let path: String
    let entered = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    private let hung = Atomic<Bool>(false)

    init(path: String) { self.path = path }

    func install() {
        FileSyncState.beforeSyncForTesting.withLock {
            $0 = FileSyncState.SyncHook { [self] path in
                guard path == self.path, !hung.exchange(true, ordering: .relaxed) else { return }
                entered.signal()
                release.wait()
            }
        }
    }

    func remove() { FileSyncState.beforeSyncForTesting.withLock { $0 = nil } }
}

// Serialized: the hook is process-wide (it acts only on its own test's file).
@Suite("A slow file", .serialized)
struct SlowFileTests {
    @Test("a file whose fdatasync hangs holds up no caller: the other streams' lines are all written meanwhile")
    func hangingSyncHoldsUpNoCaller() throws {
        let directory = TemporaryDirectory()
        let hang = HangingSync(path: directory.file("cam.timestamps.jsonl"))
        hang.install()
        defer { hang.remove() }
        var options = SyncSession.Options()
        options.queueCapacity = 256
        options.syncIntervalNs = 10_000_000
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        try session.stamp("cam", frameNumber: 0)
        // Bounded waits throughout: a test that would hang fails instead.
        #expect(hang.entered.wait(timeout: .now() + 30) == .success, "the camera's file was never synced")

        // Far more than the queue holds, while the camera's file hangs in its sync: a writer that
        // waited for that sync would leave this caller waiting for queue space.
        let imu = try session.sensorStream("imu", channels: ["x"])
        let records = 100_000
        let recorded = DispatchSemaphore(value: 0)
        let thread = Thread {
            for frame in 0..<records { try! imu.record(frameNumber: frame, values: [Double(frame)]) }
            recorded.signal()
        }
        thread.start()
        let finished = recorded.wait(timeout: .now() + 60)
        #expect(finished == .success, "the IMU's caller waited behind the camera file's sync")
        let deadline = MonotonicClock.now() + 30_000_000_000
        while directory.lines("imu.jsonl").count < records && MonotonicClock.now() < deadline { usleep(10_000) }
        #expect(directory.lines("imu.jsonl").count == records, "the IMU's lines did not reach its file during the hang")

        hang.release.signal()
        if finished == .timedOut { _ = recorded.wait(timeout: .now() + 60) }
        #expect(try session.stop() == ["cam": 1, "imu": records])
        #expect(directory.lines("imu.timestamps.jsonl").count == records)
    }

    @Test("a sync that hangs is reported while it lasts and afterwards, with its file and duration")
    func hangingSyncIsReported() throws {
        let directory = TemporaryDirectory()
        let hang = HangingSync(path: directory.file("imu.jsonl"))
        hang.install()
        defer { hang.remove() }
        var options = SyncSession.Options()
        options.syncIntervalNs = 10_000_000
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        try session.record("imu", frameNumber: 0, channels: ["x": 1])
        #expect(hang.entered.wait(timeout: .now() + 30) == .success, "the IMU's file was never synced")
        // The session's watch reports stalls of 1 s or more: wait (bounded) until this one is.
        var ongoing: [DiskWatch.Stall] = []
        let deadline = MonotonicClock.now() + 30_000_000_000
        while ongoing.isEmpty && MonotonicClock.now() < deadline {
            ongoing = session.diskWatch.takeRecentStalls().filter { $0.file == "imu.jsonl" }
            usleep(50_000)
        }
        #expect(ongoing.count == 1)
        #expect(ongoing.first?.operation == .sync)
        #expect(ongoing.first?.ongoing == true)
        #expect((ongoing.first?.seconds ?? 0) >= 1)
        hang.release.signal()
        // Once over, it is reported once more as ended, then no longer.
        var ended: [DiskWatch.Stall] = []
        while ended.isEmpty && MonotonicClock.now() < deadline {
            ended = session.diskWatch.takeRecentStalls().filter { $0.file == "imu.jsonl" && !$0.ongoing }
            usleep(10_000)
        }
        #expect(ended.count == 1)
        #expect(session.diskWatch.takeRecentStalls().filter { $0.file == "imu.jsonl" && !$0.ongoing }.isEmpty)
        try session.stop()
        let summary = session.diskWatch.summary().filter { $0.file == "imu.jsonl" }
        #expect(summary.count == 1)
        #expect(summary.first?.operation == .sync)
        #expect(summary.first?.count == 1)
        #expect((summary.first?.longestSeconds ?? 0) >= 1)
        #expect(summary.first?.longestSeconds == summary.first?.totalSeconds)
        // A new run starts afresh.
        try session.start()
        #expect(session.diskWatch.summary().isEmpty)
        try session.stop()
    }
}
