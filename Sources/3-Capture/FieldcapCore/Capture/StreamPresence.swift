import Synchronization

/// How a source whose device went away (unplugged, driver unbound) waits for the same device
/// and takes it up again, instead of ending its stream.
///
/// The device module reopens the device itself; what "the same device" is, and how to wait for
/// it (udev's events, or a rescan), the rig layer decides and hands in as `waitForDevice`.
public struct RejoinPolicy: Sendable {
    /// Returns taken within `flapWindowNs` before the source gives up: a device that flaps more
    /// often than that (a failing cable, a hub browning out) ends its stream, saying so, while
    /// one that goes now and then over days is taken up every time.
    public var maxReturns: Int
    /// The window `maxReturns` counts in: a minute.
    public static let flapWindowNs: UInt64 = 60_000_000_000
    /// Blocks on the capture thread until the same device is back, and gives its node (it may
    /// have a new one: `/dev/video2` for `/dev/video0`); nil once `stop` is requested. `note`
    /// keeps what the wait saw on the way (another camera in the device's port, not taken).
    public var waitForDevice: @Sendable (_ stop: StopSignal, _ note: @escaping (String) -> Void) -> String?
    /// How the wait learns of devices, for the sidecar and the start line (`udev's events`).
    public var watching: String

    public init(
        maxReturns: Int = 10, watching: String = "",
        waitForDevice: @escaping @Sendable (_ stop: StopSignal, _ note: @escaping (String) -> Void) -> String?
    ) {
        self.maxReturns = maxReturns
        self.watching = watching
        self.waitForDevice = waitForDevice
    }
}

/// A time a stream's device was away: when it went, why, and when frames could flow again.
public struct Absence: Sendable, Equatable {
    /// `CLOCK_MONOTONIC_RAW` when the source found the device gone.
    public var leftNs: UInt64
    /// What the source saw (the error that would have ended the stream).
    public var reason: String
    /// `CLOCK_MONOTONIC_RAW` when the device was open and streaming again; nil while away, and
    /// for good when it never came back, or came back and was refused.
    public var returnedNs: UInt64?
    /// The node it came back as.
    public var returnedAs: String?
    /// Why the device that came back was not taken up again (other modes, another camera).
    public var refusal: String?
    /// What the wait saw meanwhile (another camera in the device's port, not taken).
    public var notes: [String] = []

    public init(
        leftNs: UInt64, reason: String, returnedNs: UInt64? = nil, returnedAs: String? = nil, refusal: String? = nil
    ) {
        self.leftNs = leftNs
        self.reason = reason
        self.returnedNs = returnedNs
        self.returnedAs = returnedAs
        self.refusal = refusal
    }

    /// The part of the absence within `[fromNs, untilNs]` (a session or a segment), in ns: a
    /// time away that reaches over a boundary counts in each session only for its own part.
    public func nanoseconds(fromNs: UInt64 = 0, untilNs: UInt64) -> UInt64 {
        let start = max(leftNs, fromNs)
        let end = min(returnedNs ?? untilNs, untilNs)
        return end > start ? end - start : 0
    }

    /// How many records the absence is worth at `rate` per second, within `[fromNs, untilNs]`.
    public func recordsWorth(rate: Double, fromNs: UInt64 = 0, untilNs: UInt64) -> Int {
        rate > 0 ? Int((Double(nanoseconds(fromNs: fromNs, untilNs: untilNs)) / 1e9 * rate).rounded()) : 0
    }

    /// Whether the absence overlaps `[startNs, endNs]`, an absence still open reaching to the end.
    public func overlaps(startNs: UInt64, endNs: UInt64) -> Bool {
        leftNs <= endNs && (returnedNs ?? .max) >= startNs
    }
}

/// The times a stream's device was away, told as they happen. Written by the capture thread
/// (rarely: at a loss and a return), read by any thread; the observer is called on the capture
/// thread, outside the lock.
public final class StreamPresence: Sendable {
    private let log = Mutex<[Absence]>([])
    private let observer = Mutex<(@Sendable (Absence) -> Void)?>(nil)

    public init() {}

    /// Every absence so far, oldest first; the last is open while the device is away.
    public var absences: [Absence] { log.withLock { $0 } }

    /// Returns within `windowNs` before `nowNs`: how much the device flaps.
    public func returns(withinNs windowNs: UInt64, before nowNs: UInt64) -> Int {
        log.withLock { log in log.filter { ($0.returnedNs ?? 0) + windowNs > nowNs }.count }
    }

    /// Whether the device is away now.
    public var isAway: Bool { log.withLock { $0.last.map { $0.returnedNs == nil && $0.refusal == nil } ?? false } }

    /// Called with each absence as it opens, and again as it closes (returned or refused); not
    /// for notes.
    public func observe(_ observer: @escaping @Sendable (Absence) -> Void) {
        self.observer.withLock { $0 = observer }
    }

    /// The device went away at `atNs`.
    public func left(atNs: UInt64, reason: String) {
        tell(Absence(leftNs: atNs, reason: reason))
    }

    /// The device is back as `node` and streaming again.
    public func returned(atNs: UInt64, as node: String) {
        update {
            $0.returnedNs = atNs; $0.returnedAs = node
        }
    }

    /// What the wait saw while the device was away; each thing once.
    public func note(_ text: String) {
        update(telling: false) { if !$0.notes.contains(text) { $0.notes.append(text) } }
    }

    /// The device is not waited for, for `reason` (its buffers cannot follow a replug).
    public func gaveUp(reason: String) {
        update { $0.refusal = reason }
    }

    /// The device came back as `node`, and was not taken up again, for `reason`.
    public func refused(as node: String, reason: String) {
        update {
            $0.returnedAs = node; $0.refusal = reason
        }
    }

    private func update(telling: Bool = true, _ change: (inout Absence) -> Void) {
        let changed: Absence? = log.withLock { log in
            guard !log.isEmpty else { return nil }
            change(&log[log.count - 1])
            return log[log.count - 1]
        }
        if telling, let changed { observer.withLock { $0 }?(changed) }
    }

    private func tell(_ absence: Absence) {
        log.withLock { $0.append(absence) }
        observer.withLock { $0 }?(absence)
    }
}
