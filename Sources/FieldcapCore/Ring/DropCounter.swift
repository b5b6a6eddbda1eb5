import Synchronization

/// What a producer could not hand over: how many records it dropped, and which.
///
/// The producer calls `record` (two relaxed atomic updates, no allocation); any thread reads the
/// totals. The dropped sequence numbers are kept as the first and the last, plus the count, which
/// is what the session sidecar reports; `distinctRuns` says how many separate bursts there were.
///
/// Thread-safe: one writer (the producer), any readers.
public final class DropCounter: Sendable {
    @usableFromInline let total = Atomic<Int>(0)
    @usableFromInline let first = Atomic<UInt64>(.max)
    @usableFromInline let last = Atomic<UInt64>(.max)
    @usableFromInline let runs = Atomic<Int>(0)

    public init() {}

    /// Counts one dropped record. Producer-bound.
    @inlinable @inline(__always)
    public func record(_ sequence: UInt64) {
        let previous = last.load(ordering: .relaxed)
        if previous == .max || sequence != previous &+ 1 { runs.add(1, ordering: .relaxed) }
        if previous == .max { first.store(sequence, ordering: .relaxed) }
        last.store(sequence, ordering: .relaxed)
        total.add(1, ordering: .releasing)
    }

    /// Records dropped so far.
    public var count: Int { total.load(ordering: .acquiring) }

    /// Sequence number of the first and the last dropped record, when any was dropped.
    public var firstAndLast: (first: UInt64, last: UInt64)? {
        guard count > 0 else { return nil }
        return (first.load(ordering: .relaxed), last.load(ordering: .relaxed))
    }

    /// Separate bursts of consecutive drops.
    public var distinctRuns: Int { runs.load(ordering: .relaxed) }
}
