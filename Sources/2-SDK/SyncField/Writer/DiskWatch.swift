import FieldcapOutput
import Synchronization

/// Times the writes and syncs of a recording's files, to tell when the disk is stalled or very
/// slow: which files, and for how long.
///
/// An operation (a `write` or an `fdatasync`) that takes `stallNs` or longer (1 s by default) is
/// a stall. A status line asks `takeRecentStalls` for the stalls going on now and those that
/// ended since it last asked; `summary` gives every file's stalls over the recording, for a
/// report. Timing an operation costs two reads of the clock and a few relaxed atomics, and
/// allocates nothing, so it can sit on every write.
///
/// Thread-safe. Each file has one timer per kind of operation, started and ended by the thread
/// doing that operation (one operation of a kind in flight per file at a time); any thread may
/// read. A session has one (`SyncSession.diskWatch`), which also times files the caller writes
/// beside it (fieldcap's videos).
public final class DiskWatch: Sendable {
    public enum Operation: String, Sendable {
        case write
        case sync
    }

    /// Times one kind of operation on one file.
    ///
    /// Thread-safe: `begin` and `end` from the one thread doing the operation; the rest from any.
    public final class Timer: OperationTimer {
        public let file: String
        public let operation: Operation
        let stallNs: UInt64
        /// When the operation in flight began (`CLOCK_MONOTONIC_RAW`), or 0.
        let startedNs = Atomic<UInt64>(0)
        let stalls = Atomic<Int>(0)
        let stalledNs = Atomic<UInt64>(0)
        let longestNs = Atomic<UInt64>(0)
        let firstStallStartedNs = Atomic<UInt64>(0)
        /// The longest stall that ended since a status line last took it.
        let recentNs = Atomic<UInt64>(0)

        init(file: String, operation: Operation, stallNs: UInt64) {
            self.file = file
            self.operation = operation
            self.stallNs = stallNs
        }

        /// The operation starts; pass the result to `end`.
        @inline(__always)
        public func begin() -> UInt64 {
            let now = MonotonicClock.now()
            startedNs.store(now, ordering: .relaxed)
            return now
        }

        /// The operation that `begin` returned `started` for is over.
        @inline(__always)
        public func end(_ started: UInt64) {
            startedNs.store(0, ordering: .relaxed)
            let took = MonotonicClock.now() &- started
            if took >= stallNs { noteStall(took, started: started) }
        }

        private func noteStall(_ took: UInt64, started: UInt64) {
            if stalls.wrappingAdd(1, ordering: .relaxed).oldValue == 0 {
                firstStallStartedNs.store(started, ordering: .relaxed)
            }
            stalledNs.wrappingAdd(took, ordering: .relaxed)
            longestNs.max(took, ordering: .relaxed)
            recentNs.max(took, ordering: .relaxed)
        }

        func reset() {
            stalls.store(0, ordering: .relaxed)
            stalledNs.store(0, ordering: .relaxed)
            longestNs.store(0, ordering: .relaxed)
            firstStallStartedNs.store(0, ordering: .relaxed)
            recentNs.store(0, ordering: .relaxed)
        }
    }

    /// A stall a status line shows.
    public struct Stall: Sendable, Equatable {
        /// The file's name in the session directory.
        public var file: String
        public var operation: Operation
        /// How long it took, or has taken so far when `ongoing`.
        public var seconds: Double
        /// Still waiting for the disk.
        public var ongoing: Bool
    }

    /// One file's stalls of one kind over a recording.
    public struct Summary: Sendable, Equatable {
        public var file: String
        public var operation: Operation
        public var count: Int
        public var totalSeconds: Double
        public var longestSeconds: Double
        /// When the first one began (`CLOCK_MONOTONIC_RAW`).
        public var firstStartedNs: UInt64
    }

    /// An operation this long or longer is a stall.
    public let stallNs: UInt64
    private let timers = Mutex<[Timer]>([])

    public init(stallNs: UInt64 = 1_000_000_000) {
        self.stallNs = stallNs
    }

    /// The timer of `operation` on `file` (a file name), made on first use.
    public func timer(file: String, operation: Operation) -> Timer {
        timers.withLock { timers in
            if let timer = timers.first(where: { $0.file == file && $0.operation == operation }) { return timer }
            let timer = Timer(file: file, operation: operation, stallNs: stallNs)
            timers.append(timer)
            return timer
        }
    }

    /// The timer for `path`'s file name.
    public func timer(path: String, operation: Operation) -> Timer {
        timer(file: String(path.split(separator: "/").last ?? Substring(path)), operation: operation)
    }

    /// Stalls going on at `now`, and the longest of each file and kind that ended since the last
    /// call. For one reader (a status line).
    public func takeRecentStalls(now: UInt64 = MonotonicClock.now()) -> [Stall] {
        timers.withLock { $0 }.compactMap { timer in
            // The ended one first: taken, it is reported even if the next began meanwhile (that
            // one shows at the next call).
            let ended = timer.recentNs.exchange(0, ordering: .relaxed)
            if ended >= stallNs {
                return Stall(file: timer.file, operation: timer.operation, seconds: Double(ended) / 1e9, ongoing: false)
            }
            let started = timer.startedNs.load(ordering: .relaxed)
            guard started != 0 && now > started && now - started >= stallNs else { return nil }
            return Stall(
                file: timer.file, operation: timer.operation, seconds: Double(now - started) / 1e9, ongoing: true)
        }
    }

    /// Every file's stalls so far, in the order the files were first timed.
    public func summary() -> [Summary] {
        timers.withLock { $0 }.compactMap { timer in
            let count = timer.stalls.load(ordering: .relaxed)
            guard count > 0 else { return nil }
            return Summary(
                file: timer.file, operation: timer.operation, count: count,
                totalSeconds: Double(timer.stalledNs.load(ordering: .relaxed)) / 1e9,
                longestSeconds: Double(timer.longestNs.load(ordering: .relaxed)) / 1e9,
                firstStartedNs: timer.firstStallStartedNs.load(ordering: .relaxed))
        }
    }

    /// Forgets the stalls seen so far (a session's new run).
    func reset() {
        for timer in timers.withLock({ $0 }) { timer.reset() }
    }
}
