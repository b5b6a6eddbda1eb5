import Synchronization

/// What a producer could not hand over: how many records it dropped, and which.
///
/// The producer calls `record` (relaxed atomic updates, no allocation); any thread reads the
/// totals. The dropped sequence numbers are also kept as runs of consecutive numbers, in a table
/// sized at creation (the last run absorbs any beyond it), for the session sidecar.
///
/// Thread-safe: one writer (the producer), any readers; `runs` only after the producer finished.
public final class DropCounter: @unchecked Sendable {
    @usableFromInline let total = Atomic<Int>(0)
    @usableFromInline let first = Atomic<UInt64>(.max)
    @usableFromInline let last = Atomic<UInt64>(.max)
    @usableFromInline let runs = Atomic<Int>(0)
    /// Producer-owned table of dropped runs.
    @usableFromInline let runTable: UnsafeMutablePointer<ClosedRange<UInt64>>
    @usableFromInline let runCapacity: Int

    public init(runCapacity: Int = 256) {
        self.runCapacity = max(1, runCapacity)
        runTable = .allocate(capacity: self.runCapacity)
    }

    deinit { runTable.deallocate() }

    /// Counts one dropped record. Producer-bound.
    @inlinable @inline(__always)
    public func record(_ sequence: UInt64) { record(from: sequence, count: 1) }

    /// Counts `count` consecutive dropped records, the first numbered `firstSequence`, in constant
    /// time (a gap of a thousand samples is one call). Producer-bound.
    @inlinable
    public func record(from firstSequence: UInt64, count: Int) {
        guard count > 0 else { return }
        let lastSequence = firstSequence &+ UInt64(count - 1)
        let previous = last.load(ordering: .relaxed)
        let runCount = runs.load(ordering: .relaxed)
        if previous != .max && firstSequence == previous &+ 1 {
            let index = min(runCount, runCapacity) - 1
            (runTable + index).pointee = runTable[index].lowerBound...lastSequence
        } else {
            if runCount < runCapacity {
                (runTable + runCount).initialize(to: firstSequence...lastSequence)
            } else {
                // The table is full: the last run stretches to cover the rest.
                (runTable + runCapacity - 1).pointee = runTable[runCapacity - 1].lowerBound...lastSequence
            }
            runs.add(1, ordering: .relaxed)
        }
        if previous == .max { first.store(firstSequence, ordering: .relaxed) }
        last.store(lastSequence, ordering: .relaxed)
        total.add(count, ordering: .releasing)
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

    /// The dropped sequence numbers as runs, oldest first; when there were more runs than the
    /// table holds, the last one spans all the rest (`runsTruncated`). Read it only after the
    /// producer finished.
    public var droppedRuns: [ClosedRange<UInt64>] {
        Array(UnsafeBufferPointer(start: runTable, count: min(runs.load(ordering: .acquiring), runCapacity)))
    }

    /// Whether the table filled: the last of `droppedRuns` then spans the later runs and the
    /// records delivered between them, so only `count` is exact.
    public var runsTruncated: Bool { runs.load(ordering: .acquiring) > runCapacity }
}

/// Runs of dropped sequence numbers from more than one counter (a camera's ring and its
/// encoder), as one list.
public enum DropRuns {
    /// `first` and `second` as one list of runs, in order, with touching or overlapping runs
    /// joined.
    public static func merged(_ first: [ClosedRange<UInt64>], _ second: [ClosedRange<UInt64>]) -> [ClosedRange<UInt64>]
    {
        var merged: [ClosedRange<UInt64>] = []
        for run in (first + second).sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = merged.last, run.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, run.upperBound)
            } else {
                merged.append(run)
            }
        }
        return merged
    }
}
