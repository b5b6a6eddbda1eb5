import FieldcapSession
import Foundation
import Synchronization
import Testing

/// The disk's figures read off the thread that stops a recording (#43): a `statvfs` held by a
/// dead share must not hold the reader.
@Suite("Disk gauge", .timeLimit(.minutes(1)))
struct DiskGaugeTests {
    /// A file system that answers until `hang` is set, then holds every reading until `release`.
    final class Share: Sendable {
        let hanging = Atomic<Bool>(false)
        let released = DispatchSemaphore(value: 0)
        let readings = Atomic<Int>(0)

        func free(_ path: String) -> UInt64? {
            if hanging.load(ordering: .relaxed) { released.wait() }
            readings.add(1, ordering: .relaxed)
            return 1_000_000 - UInt64(readings.load(ordering: .relaxed))
        }
    }

    @Test("figures exist from the start and keep being read")
    func readsFromTheStart() throws {
        // The first reading is made in init, before the gauge's thread reads (a minute later).
        let first = DiskGauge(directory: "/unused", intervalMilliseconds: 60_000, readFree: Share().free) { 4096 }
        #expect(first.freeBytes == 999_999)
        #expect(first.recordingBytes == 4096)
        first.stop()
        let share = Share()
        let gauge = DiskGauge(directory: "/unused", intervalMilliseconds: 10, readFree: share.free) { 4096 }
        defer { gauge.stop() }
        let deadline = Date().addingTimeInterval(5)
        while share.readings.load(ordering: .relaxed) < 5 && Date() < deadline { usleep(5000) }
        #expect(share.readings.load(ordering: .relaxed) >= 5)
        #expect(try #require(gauge.freeBytes) < 999_999)
    }

    @Test("a free space below the low mark is told once, on the gauge's thread, with its figure")
    func lowIsToldOnce() {
        let share = Share()
        let told = Mutex<[(free: UInt64, thread: String)]>([])
        // Each reading has one byte less: 999,999, 999,998, ... below 999,996 from the fifth on,
        // which the gauge's thread makes (the first is made in init).
        let gauge = DiskGauge(
            directory: "/unused", intervalMilliseconds: 5, readFree: share.free, lowBelow: 999_996,
            low: { free in
                let thread = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
                told.withLock { $0.append((free, thread.trimmingCharacters(in: .whitespacesAndNewlines))) }
            }
        ) { 0 }
        defer { gauge.stop() }
        let deadline = Date().addingTimeInterval(5)
        while share.readings.load(ordering: .relaxed) < 20 && Date() < deadline { usleep(5000) }
        #expect(share.readings.load(ordering: .relaxed) >= 20)
        #expect(told.withLock { $0.map(\.free) } == [999_995])
        #expect(told.withLock { $0.map(\.thread) } == ["fc-disk-gauge"])
    }

    /// Were a reading made on the reader's thread, this test would wait on the held share until
    /// the suite's time limit, and fail there.
    @Test("a reading the disk holds leaves the last figures readable, and stop returns")
    func aHeldReadingDoesNotHoldTheReader() throws {
        let share = Share()
        let gauge = DiskGauge(directory: "/unused", intervalMilliseconds: 10, readFree: share.free) { 0 }
        share.hanging.store(true, ordering: .relaxed)
        usleep(300_000)
        let free = gauge.freeBytes
        gauge.stop()
        #expect(free != nil)
        // The gauge's thread is held: its last reading ages while the disk holds it.
        #expect(gauge.secondsSinceReading > 0.2)
        share.hanging.store(false, ordering: .relaxed)
        share.released.signal()
    }

    @Test("a file system that does not say its free space gives no figure, not zero")
    func unknownFreeSpace() {
        let gauge = DiskGauge(directory: "/unused", readFree: { _ in nil }) { 0 }
        defer { gauge.stop() }
        #expect(gauge.freeBytes == nil)
    }
}
