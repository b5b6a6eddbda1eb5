import Foundation
import MallocInterposerSwift
import Synchronization
import Testing

@testable import SyncField

// The interposer counts every malloc in the process, and other suites run in parallel with this
// one; so its hook counts only the allocations made on the threads under watch.
nonisolated(unsafe) var watchedCaller = pthread_t()
nonisolated(unsafe) var watchedWriter = pthread_t()
nonisolated(unsafe) var watchedSyncer = pthread_t()
let callerAllocations = Atomic<Int>(0)
let writerAllocations = Atomic<Int>(0)
let syncerAllocations = Atomic<Int>(0)

let countWatchedAllocations: MallocInterposerSwift.AllocationHook = { _ in
    let me = pthread_self()
    if me == watchedCaller { callerAllocations.add(1, ordering: .relaxed) }
    if me == watchedWriter { writerAllocations.add(1, ordering: .relaxed) }
    if me == watchedSyncer { syncerAllocations.add(1, ordering: .relaxed) }
}

/// Runs `body` on a fresh thread of its own and waits for it.
func onOwnThread(_ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.start()
    done.wait()
}

@Suite("Allocation on the hot path", .serialized)
struct HotPathAllocationTests {
    @Test("the interposer is active: allocations on a watched thread are counted")
    func interposerSeesAllocations() {
        MallocInterposerSwift.setAllocationHook(countWatchedAllocations)
        onOwnThread {
            watchedCaller = pthread_self()
            callerAllocations.store(0, ordering: .relaxed)
            MallocInterposerSwift.hook()
            var objects: [NSObject] = []
            for _ in 0..<100 { objects.append(NSObject()) }
            MallocInterposerSwift.unhook()
            watchedCaller = pthread_t()
            #expect(objects.count == 100)
        }
        #expect(callerAllocations.load(ordering: .relaxed) >= 100)
    }

    @Test("fixed-shape records and stamps allocate nothing, on the caller's thread, the writer's or the sync thread's")
    func fixedShapeAllocatesNothing() throws {
        let directory = NSTemporaryDirectory() + "/alloc-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Syncs every 50 ms, so the sync thread makes several rounds while watched.
        var options = SyncSession.Options()
        options.syncInterval = 0.05
        let session = SyncSession(hostId: "rig_01", outputDir: directory, options: options)
        try session.start()
        let imu = try session.sensorStream(
            "imu", channels: ["accel_x", "accel_y", "accel_z", "gyro_x", "gyro_y", "gyro_z"])
        let writer = try #require(session.writerThread)
        let syncer = try #require(session.syncThread)
        let records = 50_000
        MallocInterposerSwift.setAllocationHook(countWatchedAllocations)
        onOwnThread {
            var values = [0.12, -9.80665, 0.3, 0.001, -0.002, 0.5]
            // Warm-up: the first call of a stream opens its files; the writer sizes its buffers.
            for frame in 0..<2_000 {
                try! imu.record(frameNumber: frame, values: values)
                try! session.stamp("cam", frameNumber: frame)
            }
            usleep(100_000)
            watchedCaller = pthread_self()
            watchedWriter = writer
            watchedSyncer = syncer
            callerAllocations.store(0, ordering: .relaxed)
            writerAllocations.store(0, ordering: .relaxed)
            syncerAllocations.store(0, ordering: .relaxed)
            MallocInterposerSwift.hook()
            for frame in 2_000..<(2_000 + records) {
                values[0] = Double(frame) * 1e-3
                try! imu.record(frameNumber: frame, values: values)
                try! session.stamp("cam", frameNumber: frame)
            }
            usleep(300_000)  // let the writer encode and write what it was given
            MallocInterposerSwift.unhook()
            watchedCaller = pthread_t()
            watchedWriter = pthread_t()
            watchedSyncer = pthread_t()
        }
        MallocInterposerSwift.setAllocationHook(nil)
        #expect(try session.stop() == ["imu": records + 2_000, "cam": records + 2_000])
        #expect(callerAllocations.load(ordering: .relaxed) == 0)
        #expect(writerAllocations.load(ordering: .relaxed) == 0)
        #expect(syncerAllocations.load(ordering: .relaxed) == 0)
    }
}
