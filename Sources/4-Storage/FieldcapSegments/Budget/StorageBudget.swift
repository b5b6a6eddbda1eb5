/// How much of the past a segmented recording keeps: at most `maxBytes` on disk, and/or nothing
/// that ended more than `keepNs` ago. The oldest finished segments go first; the segments being
/// written are never deleted.
///
/// The size rule keeps room for the segment being written: it deletes until the finished
/// segments, the recording's own files (its index and disk reserve) and the largest segment so
/// far (what the current one grows to) fit, so the directory stays within the budget while
/// segments are alike, and exceeds it by less than one segment when one grows larger than any
/// before it.
public struct StorageBudget: Sendable, Equatable {
    public var maxBytes: UInt64?
    public var keepNs: UInt64?

    public init(maxBytes: UInt64? = nil, keepNs: UInt64? = nil) {
        self.maxBytes = maxBytes
        self.keepNs = keepNs
    }

    public var isLimited: Bool { maxBytes != nil || keepNs != nil }

    /// A deletion the budget asks for.
    public struct Deletion: Equatable, Sendable {
        public var number: Int
        /// `--max-storage 16G` or `--keep 2h`, as the index records it.
        public var reason: String
    }

    /// The finished segments to delete now, oldest first.
    ///
    /// - Parameters:
    ///   - index: the recording's segments; `complete` and `recovered` ones with a size may go,
    ///     except those marked `kept` (their files are not all fieldcap's).
    ///   - openBytes: what the segments being written hold now.
    ///   - ownBytes: what the recording's directory holds beside its segments (the index, and the
    ///     disk reserve while recording). It comes on top of the room kept for the segment being
    ///     written: a reserve larger than a segment once took that room, and the directory grew
    ///     a whole segment past the budget.
    ///   - nowNs: `CLOCK_MONOTONIC_RAW` now, for `keepNs`.
    ///   - maxLabel, keepLabel: how the user wrote the limits, for the reason.
    public func deletions(
        in index: RecordingIndex, openBytes: UInt64, ownBytes: UInt64 = 0, nowNs: UInt64, maxLabel: String,
        keepLabel: String
    ) -> [Deletion] {
        let finished = index.segments.filter {
            ($0.state == .complete || $0.state == .recovered) && $0.bytes != nil
        }
        var deletions: [Deletion] = []
        var gone = Set<Int>()
        if let keepNs {
            for segment in finished where segment.kept == nil && nowNs > segment.endMonotonicRawNs &+ keepNs {
                deletions.append(Deletion(number: segment.number, reason: keepLabel))
                gone.insert(segment.number)
            }
        }
        if let maxBytes {
            let largest = finished.map { $0.bytes ?? 0 }.max() ?? 0
            var total = finished.filter { !gone.contains($0.number) }.reduce(UInt64(0)) { $0 + ($1.bytes ?? 0) }
            total += ownBytes + max(openBytes, largest)
            for segment in finished where total > maxBytes && segment.kept == nil && !gone.contains(segment.number) {
                deletions.append(Deletion(number: segment.number, reason: maxLabel))
                gone.insert(segment.number)
                total -= segment.bytes ?? 0
            }
        }
        return deletions.sorted { $0.number < $1.number }
    }
}
