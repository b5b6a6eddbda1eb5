import FieldcapCore
import FieldcapSegments
import Glibc
import SyncField
import Synchronization

/// What keeps a recording's marks on disk: each one's line in the `events.ndjson` where its
/// instant falls, and the recording's own list (a segmented recording's index; a session's
/// `events.ndjson` alone). `SegmentedSessions` and `SessionMarks`.
public protocol MarkKeeper: AnyObject, Sendable {
    /// The marks so far, in the order taken; those the budget gave up included.
    var marks: [Mark] { get }
    /// `CLOCK_MONOTONIC_RAW` where the recording's data begins; nil before it does.
    var startNs: UInt64? { get }
    /// The wall-clock time (UTC nanoseconds) of a `CLOCK_MONOTONIC_RAW` instant, through the
    /// recording's sync point (a segmented recording's first).
    func wallClockNs(ofMonotonicRawNs ns: UInt64) -> UInt64?
    /// Writes a stamped mark, durably; what the user should hear about it (the budget cannot
    /// keep every marked window) comes back. Throws a refusal when the mark cannot be kept.
    func keep(_ mark: Mark) throws(MarkRefusal) -> [String]
}

/// A recording's marks: each request checked, stamped on `CLOCK_MONOTONIC_RAW`, numbered and
/// handed to the recording's `MarkKeeper`, one at a time. Thread-safe: marks come from a socket's
/// thread, the API's tasks, a GPIO line's thread, the terminal's.
public final class MarkBook: Sendable {
    public let windows: MarkWindows
    private let keeper: any MarkKeeper
    /// Held while a mark is kept, so ids follow the order on disk.
    private let state: Mutex<State>

    struct State {
        /// The last mark's number.
        var last: Int
        /// Marks that may come at once (`burst`, refilled at `perSecond`): a script or a hostile
        /// peer sending marks in a loop must not keep the disk busy with index rewrites.
        var allowance: Double
        var refilledNs: UInt64
        /// The recording is stopping: its files are being finished.
        var closed = false
    }

    /// At most this many marks a recording.
    public static let maxMarks = 5_000
    /// Marks at once, and a second after that.
    static let burst = 20.0
    static let perSecond = 5.0

    public init(keeper: any MarkKeeper, windows: MarkWindows) {
        self.keeper = keeper
        self.windows = windows
        state = Mutex(State(last: keeper.marks.count, allowance: Self.burst, refilledNs: MonotonicClock.now()))
    }

    public var marks: [Mark] { keeper.marks }

    /// How far in the future an instant may be (a fleet's, from a host whose clock runs ahead).
    static let futureSlackNs: UInt64 = 2_000_000_000

    /// Takes a mark: checks it, stamps it (now, unless it names its instant), keeps it. Returns
    /// the mark as kept and what the user should hear (`MarkKeeper.keep`).
    public func mark(
        _ request: MarkRequest, nowNs: UInt64 = MonotonicClock.now()
    ) throws(MarkRefusal) -> (
        mark: Mark, warnings: [String]
    ) {
        try request.validate()
        guard let startNs = keeper.startNs else {
            throw MarkRefusal(.conflict, "the recording has not begun yet: mark again once it has")
        }
        let atNs: UInt64
        if let at = request.atMonotonicRawNs {
            atNs = at
        } else if let wall = request.atWallClockNs {
            // The wall clock against RAW now: a clock stepped since the sync point counts as it
            // reads now, the same instant every rig of a fleet means.
            let offset = ClockPairReader.host(CLOCK_REALTIME).sample().offsetNs
            let raw = Int64(clamping: wall) &+ offset
            atNs = raw > 0 ? UInt64(raw) : 0
        } else {
            atNs = nowNs
        }
        if atNs < startNs {
            throw MarkRefusal(
                .conflict,
                "the instant is \(Self.seconds(startNs - atNs)) before the recording began: nothing was recorded then")
        }
        if atNs > nowNs &+ Self.futureSlackNs {
            throw MarkRefusal(
                .conflict, "the instant is \(Self.seconds(atNs - nowNs)) in the future: mark it when it comes")
        }
        let wallNs = keeper.wallClockNs(ofMonotonicRawNs: atNs)
        let utc = wallNs.map { SyncPoint.isoDatetime(wallClockNs: $0) } ?? ""
        return try state.withLock { state throws(MarkRefusal) in
            if state.closed { throw MarkRefusal(.conflict, "the recording is stopping: no more marks") }
            if state.last >= Self.maxMarks {
                throw MarkRefusal(.conflict, "the recording holds \(Self.maxMarks) marks, the most it takes")
            }
            let elapsed = Double(nowNs &- state.refilledNs) / 1e9
            if nowNs > state.refilledNs {
                state.allowance = min(Self.burst, state.allowance + elapsed * Self.perSecond)
                state.refilledNs = nowNs
            }
            guard state.allowance >= 1 else {
                throw MarkRefusal(
                    .conflict,
                    "too many marks: at most \(Int(Self.burst)) at once and \(Int(Self.perSecond)) a second after")
            }
            var mark = Mark(
                id: "m\(state.last + 1)", label: request.label.trimmingSpaces, note: request.note,
                source: request.source,
                captureNs: atNs, utc: utc, beforeSeconds: request.beforeSeconds ?? windows.beforeSeconds,
                afterSeconds: request.afterSeconds ?? windows.afterSeconds)
            mark.wallClockNs = wallNs
            mark.uncertaintyNs = request.uncertaintyNs
            let warnings = try keeper.keep(mark)
            state.last += 1
            state.allowance -= 1
            return (mark, warnings)
        }
    }

    /// Takes no more marks; waits for one being kept (its line and the index written) to finish.
    public func close() { state.withLock { $0.closed = true } }

    static func seconds(_ ns: UInt64) -> String {
        let seconds = Double(ns) / 1e9
        return seconds < 10 ? "\((seconds * 1000).rounded() / 1000) s" : "\(Int(seconds.rounded())) s"
    }
}

extension String {
    /// Without the spaces (and tabs, line breaks) at either end.
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}

extension SyncPoint {
    /// The wall-clock time (UTC nanoseconds) of a `CLOCK_MONOTONIC_RAW` instant, through this
    /// sync point.
    public func wallClockNs(ofMonotonicRawNs ns: UInt64) -> UInt64 {
        let offset = Int64(bitPattern: ns &- monotonicNs)
        let wall = Int64(clamping: wallClockNs) &+ offset
        return wall > 0 ? UInt64(wall) : 0
    }
}
