import FieldcapSession
import Foundation
import Synchronization
import Testing

@testable import SyncField

@Suite("Stop watchdog: a disk that stopped answering cannot hold a stop for ever")
struct StopWatchdogTests {
    /// A disk whose stall (or none) is set by the test.
    final class Disk: DiskStalls {
        let stall: Mutex<DiskWatch.Stall?>
        init(_ stall: DiskWatch.Stall?) { self.stall = Mutex(stall) }
        var stallNs: UInt64 { 1_000_000_000 }
        func takeRecentStalls() -> [DiskWatch.Stall] { stall.withLock { $0.map { [$0] } ?? [] } }
        func summary() -> [DiskWatch.Summary] { [] }
    }

    static func stall(_ seconds: Double) -> DiskWatch.Stall {
        DiskWatch.Stall(file: "cam.mkv", operation: .sync, seconds: seconds, ongoing: true)
    }

    @Test("a stop on a disk stalled past the limit is given up, saying which operation of which file waits")
    func givesUpOnAStalledDisk() {
        let why = Mutex<String?>(nil)
        let watchdog = StopWatchdog(diskStalls: Disk(Self.stall(2)), writeFailed: false, limitSeconds: 0.5) { text in
            why.withLock { $0 = text }
        }
        for _ in 0..<200 where why.withLock({ $0 }) == nil { usleep(50_000) }
        watchdog.finished()
        let said = why.withLock { $0 } ?? ""
        #expect(said.contains("sync of cam.mkv"), "\(said)")
        #expect(said.contains("still waiting") && said.contains("fieldcap recover"), "\(said)")
    }

    @Test("after a write failed, the limit holds even with no stall seen")
    func givesUpAfterAWriteFailed() {
        let why = Mutex<String?>(nil)
        let watchdog = StopWatchdog(diskStalls: Disk(nil), writeFailed: true, limitSeconds: 0.3) { text in
            why.withLock { $0 = text }
        }
        for _ in 0..<200 where why.withLock({ $0 }) == nil { usleep(50_000) }
        watchdog.finished()
        #expect(why.withLock { $0 }?.contains("after a write failed") == true)
    }

    @Test("a stop on a disk that answers is cut short only past three times the limit; a finished stop ends the watch")
    func leavesAnAnsweringDiskAlone() {
        let called = Mutex(false)
        let watchdog = StopWatchdog(diskStalls: Disk(nil), writeFailed: false, limitSeconds: 0.2) { _ in
            called.withLock { $0 = true }
        }
        usleep(400_000)  // twice the limit: not yet
        #expect(!called.withLock { $0 })
        for _ in 0..<200 where !called.withLock({ $0 }) { usleep(50_000) }
        watchdog.finished()
        #expect(called.withLock { $0 }, "past three times the limit")
        called.withLock { $0 = false }
        // Finished before the limit on a stalled disk: never called.
        let early = StopWatchdog(diskStalls: Disk(Self.stall(5)), writeFailed: true, limitSeconds: 5) { _ in
            called.withLock { $0 = true }
        }
        early.finished()
        #expect(!called.withLock { $0 })
    }
}
