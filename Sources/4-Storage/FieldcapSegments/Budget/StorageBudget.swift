/// How much of the past a segmented recording keeps: at most `maxBytes` on disk, and/or nothing
/// that ended more than `keepNs` ago. The oldest finished segments go first; the segments being
/// written are never deleted.
///
/// The size rule keeps room for the segment being written: it deletes until the finished
/// segments, the recording's own files (its index and disk reserve) and the largest segment so
/// far (what the current one grows to) fit, so the directory stays within the budget while
/// segments are alike, and exceeds it by less than one segment when one grows larger than any
/// before it.
///
/// Marks: a segment a mark's window touches is kept past `keepNs`, and the size rule deletes every
/// segment no window touches before it deletes one a window does. When the marked segments alone
/// do not fit, the oldest mark is given up (its window no longer keeps anything) and its
/// segments go, oldest first; then the next oldest, and so on.
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
        /// `--max-storage 16G` or `--keep 2h`, as the index records it; with the mark given up
        /// for it, when one was.
        public var reason: String
        /// The mark whose window held the segment, given up to keep the budget.
        public var droppedMark: String?
    }

    /// The finished segments to delete now, oldest first.
    ///
    /// - Parameters:
    ///   - index: the recording's segments; `complete` and `recovered` ones with a size may go,
    ///     except those marked `kept` (their files are not all fieldcap's).
    ///   - marks: the recording's marks; those already `evicted` keep nothing.
    ///   - openBytes: what the segments being written hold now.
    ///   - ownBytes: what the recording's directory holds beside its segments (the index, and the
    ///     disk reserve while recording). It comes on top of the room kept for the segment being
    ///     written: a reserve larger than a segment once took that room, and the directory grew
    ///     a whole segment past the budget.
    ///   - nowNs: `CLOCK_MONOTONIC_RAW` now, for `keepNs`.
    ///   - maxLabel, keepLabel: how the user wrote the limits, for the reason.
    public func deletions(
        in index: RecordingIndex, marks: [Mark] = [], openBytes: UInt64, ownBytes: UInt64 = 0, nowNs: UInt64,
        maxLabel: String, keepLabel: String
    ) -> [Deletion] {
        let finished = index.segments.filter {
            ($0.state == .complete || $0.state == .recovered) && $0.bytes != nil
        }
        // Counted in the total, never deleted.
        let deletable = finished.filter { $0.kept == nil }
        var live = marks.filter { $0.evicted == nil }.sorted { $0.captureNs < $1.captureNs }
        func touches(_ mark: Mark, _ segment: RecordingIndex.Segment) -> Bool {
            mark.windowTouches(startNs: segment.startMonotonicRawNs, endNs: segment.endMonotonicRawNs)
        }
        // How many live marks' windows touch each segment that may go.
        var holders: [Int: Int] = [:]
        for segment in deletable {
            holders[segment.number] = live.reduce(0) { $0 + (touches($1, segment) ? 1 : 0) }
        }
        func held(_ segment: RecordingIndex.Segment) -> Bool { (holders[segment.number] ?? 0) > 0 }
        var deletions: [Deletion] = []
        var gone = Set<Int>()
        if let keepNs {
            for segment in deletable where nowNs > segment.endMonotonicRawNs &+ keepNs && !held(segment) {
                deletions.append(Deletion(number: segment.number, reason: keepLabel))
                gone.insert(segment.number)
            }
        }
        if let maxBytes {
            let largest = finished.map { $0.bytes ?? 0 }.max() ?? 0
            var total = finished.filter { !gone.contains($0.number) }.reduce(UInt64(0)) { $0 + ($1.bytes ?? 0) }
            total += ownBytes + max(openBytes, largest)
            func deleteUnheld(reason: String, dropped: String?) {
                for segment in deletable where total > maxBytes && !gone.contains(segment.number) && !held(segment) {
                    deletions.append(Deletion(number: segment.number, reason: reason, droppedMark: dropped))
                    gone.insert(segment.number)
                    total -= segment.bytes ?? 0
                }
            }
            deleteUnheld(reason: maxLabel, dropped: nil)
            // Over still: give up the oldest mark whose giving up frees a segment now, one its
            // window alone holds. A mark whose segments another window holds too (a window inside
            // another), or that holds only segments being written, frees nothing and keeps its
            // place; every mark given up is named by a deletion.
            while total > maxBytes {
                guard
                    let oldest = live.firstIndex(where: { mark in
                        deletable.contains {
                            !gone.contains($0.number) && holders[$0.number] == 1 && touches(mark, $0)
                        }
                    })
                else { break }
                let mark = live.remove(at: oldest)
                for segment in deletable where touches(mark, segment) { holders[segment.number, default: 1] -= 1 }
                deleteUnheld(reason: "\(maxLabel), mark \(mark.id) \"\(mark.label)\" given up", dropped: mark.id)
            }
        }
        return deletions.sorted { $0.number < $1.number }
    }

    /// About how many bytes the segments the live marks' windows touch take, with the room
    /// `deletions` keeps for the segment being written (`openBytes`) and the recording's own
    /// files (`ownBytes`) on top: what the budget must hold for every mark to keep its window. A
    /// segment not written yet (a window reaching into the future) counts as `segmentBytes`.
    public static func bytesForMarkedWindows(
        marks: [Mark], index: RecordingIndex, schedule: SegmentSchedule, segmentBytes: UInt64, openBytes: UInt64,
        ownBytes: UInt64
    ) -> UInt64 {
        // Each window as a range of segment numbers, the ranges merged: a window of a day in 1 s
        // segments is one range, not 86,400 numbers.
        var ranges: [ClosedRange<Int>] = []
        for mark in marks where mark.evicted == nil {
            let from = schedule.number(containing: max(mark.windowStartNs, schedule.startNs))
            let to = schedule.number(containing: max(mark.windowEndNs, schedule.startNs + 1) - 1)
            if from <= to { ranges.append(from...to) }
        }
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<Int>] = []
        for range in ranges {
            if let last = merged.last, range.lowerBound <= last.upperBound + 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        func inside(_ number: Int) -> Bool {
            var low = 0
            var high = merged.count
            while low < high {
                let middle = (low + high) / 2
                if merged[middle].upperBound < number { low = middle + 1 } else { high = middle }
            }
            return low < merged.count && merged[low].contains(number)
        }
        var total = openBytes + ownBytes
        var counted = 0
        var seen = Set<Int>()
        for segment in index.segments where inside(segment.number) && seen.insert(segment.number).inserted {
            counted += 1
            if segment.state != .deleted { total += segment.bytes ?? segmentBytes }
        }
        // Segments not written yet (or not in the index) at the typical size.
        let numbers = merged.reduce(0) { $0 + $1.count }
        total += UInt64(max(0, numbers - counted)) &* segmentBytes
        return total
    }
}

extension SegmentSchedule {
    /// The segment `ns` falls in (1 for the first; 1 for a time before the start).
    public func number(containing ns: UInt64) -> Int {
        guard ns >= startNs else { return 1 }
        return Int(clamping: (ns - startNs) / lengthNs) + 1
    }
}
