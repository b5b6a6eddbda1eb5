import Glibc
import Synchronization

/// An instant of the wall clock a recording waits for (a fleet's shared start), which another
/// thread can call off: a stop that comes while the start is pending. Thread-safe.
public final class ScheduledStart: Sendable {
    /// The instant, nanoseconds since the epoch (`CLOCK_REALTIME`).
    public let atNs: UInt64
    private let cancelled = Atomic<Bool>(false)

    public init(atNs: UInt64) { self.atNs = atNs }

    /// Calls the start off; `wait` returns false within `slice`.
    public func cancel() { cancelled.store(true, ordering: .releasing) }

    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// How often a waiting thread looks whether the start was called off.
    static let sliceNs: UInt64 = 50_000_000

    /// Blocks the calling thread until the wall clock reads `atNs` (at once if it has passed);
    /// false when the start was called off first. The wait is cut into slices to look at the
    /// flag, but each slice ends at an absolute instant and the last one at `atNs` itself, so
    /// the start is as close to the instant as one `clock_nanosleep` gets.
    public func wait() -> Bool {
        while !isCancelled {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let nowNs = UInt64(max(0, now.tv_sec)) * 1_000_000_000 + UInt64(max(0, now.tv_nsec))
            guard nowNs < atNs else { return true }
            let (sliceEnd, overflow) = nowNs.addingReportingOverflow(Self.sliceNs)
            if overflow || sliceEnd >= atNs {
                WallClock.sleep(untilNs: atNs)
                return !isCancelled
            }
            WallClock.sleep(untilNs: sliceEnd)
        }
        return false
    }
}
