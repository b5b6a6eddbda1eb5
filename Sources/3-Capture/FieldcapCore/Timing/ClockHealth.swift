import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a stream's mapping of its device's clock into `CLOCK_MONOTONIC_RAW` stands, for live
/// viewers (the status, Foxglove, the web page): the sidecar's `clock_mapping` at an instant.
public struct ClockHealth: Sendable, Equatable {
    /// The device's clock (`CLOCK_MONOTONIC`, `CLOCK_REALTIME`, `CLOCK_BOOTTIME`).
    public var from: String
    /// RAW − the device's clock at the latest clock pair.
    public var offsetNs: Int64
    /// The latest pair's bracket: how closely the two clocks were read together.
    public var bracketNs: Int64
    /// The device clock's rate against RAW in ppm (nil before two pairs).
    public var driftPPM: Double?
    /// The largest bound handed out with a mapped time so far.
    public var worstUncertaintyNs: Int64
    public var pairs: Int
    public var pairsRefused: Int
    public var steps: Int
    public var rateChanges: Int
    /// When this was taken (`CLOCK_MONOTONIC_RAW`).
    public var atNs: UInt64

    public init(from: String, tracker: ClockTracker, atNs: UInt64) {
        self.from = from
        offsetNs = tracker.latest?.offsetNs ?? 0
        bracketNs = tracker.latest?.bracketNs ?? 0
        driftPPM = tracker.driftPPM
        worstUncertaintyNs = tracker.worstUncertaintyNs
        pairs = tracker.pairsUsed
        pairsRefused = tracker.pairsRefused
        steps = tracker.steps
        rateChanges = tracker.rateChanges
        self.atNs = atNs
    }

    /// The name of a clock a device stamps in.
    public static func name(_ clock: clockid_t) -> String {
        switch clock {
        case CLOCK_MONOTONIC: "CLOCK_MONOTONIC"
        case CLOCK_REALTIME: "CLOCK_REALTIME"
        case CLOCK_BOOTTIME: "CLOCK_BOOTTIME"
        default: "clock \(clock)"
        }
    }
}

/// A capture thread's latest `ClockHealth`, for readers on other threads: published at most once
/// a second (one atomic load otherwise), so the capture's own work stays what it was.
public final class ClockHealthBoard: Sendable {
    private let latest = Mutex<ClockHealth?>(nil)
    private let publishedNs = Atomic<UInt64>(0)
    public let clock: String

    public init(clock: clockid_t) { self.clock = ClockHealth.name(clock) }

    /// Capture thread: publishes `tracker`'s state if the last was a second or more ago.
    @inline(__always)
    public func offer(_ tracker: ClockTracker, nowNs: UInt64) {
        guard nowNs &- publishedNs.load(ordering: .relaxed) >= 1_000_000_000 else { return }
        publishedNs.store(nowNs, ordering: .relaxed)
        let health = ClockHealth(from: clock, tracker: tracker, atNs: nowNs)
        latest.withLock { $0 = health }
    }

    public var current: ClockHealth? { latest.withLock { $0 } }
}
