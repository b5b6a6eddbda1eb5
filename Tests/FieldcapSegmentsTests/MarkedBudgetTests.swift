import Testing

@testable import FieldcapSegments

/// The budget with marks: unmarked segments first, then the oldest mark's.
@Suite struct MarkedBudgetTests {
    /// `sizes.count` finished segments of 1 s each from 0, each `size` bytes.
    func index(_ count: Int, size: UInt64 = 100) -> RecordingIndex {
        var index = RecordingIndex(
            fieldcapVersion: "test", hostId: "h", segmentSeconds: 1, maxStorageBytes: nil, keepSeconds: nil,
            streams: [])
        for offset in 0..<count {
            var segment = RecordingIndex.Segment(
                number: offset + 1, directory: "\(offset + 1)", state: .complete,
                startMonotonicRawNs: UInt64(offset) * 1_000_000_000,
                endMonotonicRawNs: UInt64(offset + 1) * 1_000_000_000, startUtc: "", endUtc: "")
            segment.bytes = size
            index.segments.append(segment)
        }
        return index
    }

    /// A mark at `seconds` with windows of `window` seconds each side.
    func mark(_ id: String, at seconds: Double, window: Double = 0.4) -> Mark {
        Mark(
            id: id, label: "l\(id)", note: nil, source: "test", captureNs: UInt64(seconds * 1e9), utc: "",
            beforeSeconds: window, afterSeconds: window)
    }

    @Test func unmarkedSegmentsGoFirstWhateverTheirAge() {
        // 10 segments of 100, room for 5 finished + one being written (600): 5 must go. The marks
        // hold segments 1 (0.5 s) and 3 (2.5 s): the five oldest unmarked go, 2 4 5 6 7.
        let deletions = StorageBudget(maxBytes: 600).deletions(
            in: index(10), marks: [mark("m1", at: 0.5), mark("m2", at: 2.5)], openBytes: 0, nowNs: 0,
            maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [2, 4, 5, 6, 7])
        #expect(deletions.allSatisfy { $0.droppedMark == nil && $0.reason == "max" })
    }

    @Test func aWindowAcrossABoundaryHoldsBothSegments() {
        // At 3.0 s, 0.4 s each side: segments 3 and 4.
        let deletions = StorageBudget(maxBytes: 300).deletions(
            in: index(5), marks: [mark("m1", at: 3.0)], openBytes: 0, nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2, 5])
    }

    @Test func whenTheMarkedWindowsDoNotFitTheOldestMarkIsGivenUp() {
        // Three marks hold segments 2, 5 and 8; room for 2 finished (300): every unmarked one goes,
        // then m1's segment 2, said with the mark.
        let deletions = StorageBudget(maxBytes: 300).deletions(
            in: index(8), marks: [mark("m2", at: 4.5), mark("m1", at: 1.5), mark("m3", at: 7.5)], openBytes: 0,
            nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2, 3, 4, 6, 7])
        let given = deletions.first { $0.number == 2 }
        #expect(given?.droppedMark == "m1")
        #expect(given?.reason == "max, mark m1 \"lm1\" given up")
        #expect(deletions.filter { $0.droppedMark != nil }.count == 1)
    }

    @Test func aWindowInsideAnotherIsGivenUpWhenItsOwnSegmentsCanGoAndEveryMarkGivenUpIsNamed() {
        // m1 (older) at 2.5 s holds segment 3; m2 at 2.6 s with 0.9 s each side holds 2 to 4,
        // segment 3 among them. No room for a finished one: the unmarked 1 and 5 go; giving up
        // m1 would free nothing (m2 holds its segment), so m2 goes first (2 and 4), then m1 (3),
        // each deletion naming the mark it gave up.
        let deletions = StorageBudget(maxBytes: 100).deletions(
            in: index(5), marks: [mark("m1", at: 2.5), mark("m2", at: 2.6, window: 0.9)], openBytes: 0, nowNs: 0,
            maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2, 3, 4, 5])
        #expect(deletions.first { $0.number == 2 }?.droppedMark == "m2")
        #expect(deletions.first { $0.number == 3 }?.droppedMark == "m1")
        #expect(Set(deletions.compactMap(\.droppedMark)) == ["m1", "m2"])
    }

    @Test func theMarkedWindowsOfADayInSmallSegmentsAreCountedAsRanges() {
        // 5,000 marks of a day each side in 1 s segments: ranges, not numbers (this was 10^9 set
        // insertions once).
        let schedule = SegmentSchedule(startNs: 0, lengthNs: 1_000_000_000)
        let marks = (0..<5_000).map { mark("m\($0)", at: Double($0), window: 86_400) }
        let needed = StorageBudget.bytesForMarkedWindows(
            marks: marks, index: index(0), schedule: schedule, segmentBytes: 1, openBytes: 0, ownBytes: 0)
        // Segments 1 to 4,999 + 86,400 + 1 (the window's end, one past).
        #expect(needed == UInt64(4_999 + 86_400 + 1))
    }

    @Test func aMarkGivenUpBeforeHoldsNothing() {
        var given = mark("m1", at: 0.5)
        given.evicted = RecordingIndex.Deletion(utc: "", reason: "max")
        let deletions = StorageBudget(maxBytes: 300).deletions(
            in: index(4), marks: [given], openBytes: 0, nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2])
    }

    @Test func aMarkWhoseWindowIsOnlyInTheSegmentBeingWrittenIsNotGivenUp() {
        // The mark is at 5.5 s, in the segment being written (not in the index's finished ones);
        // 4 finished of 100 with room for 1 (200 with the open one's): all four go, the mark stays.
        var recording = index(4)
        var open = RecordingIndex.Segment(
            number: 5, directory: "5", state: .recording, startMonotonicRawNs: 4_000_000_000,
            endMonotonicRawNs: 5_000_000_000, startUtc: "", endUtc: "")
        open.bytes = nil
        recording.segments.append(open)
        let deletions = StorageBudget(maxBytes: 150).deletions(
            in: recording, marks: [mark("m1", at: 4.5)], openBytes: 100, nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2, 3, 4])
        #expect(deletions.allSatisfy { $0.droppedMark == nil })
    }

    @Test func keepNeverDeletesAMarkedSegment() {
        let deletions = StorageBudget(keepNs: 1_000_000_000).deletions(
            in: index(5), marks: [mark("m1", at: 1.5)], openBytes: 0, nowNs: 10_000_000_000, maxLabel: "",
            keepLabel: "keep")
        #expect(deletions.map(\.number) == [1, 3, 4, 5])
    }

    @Test func theBytesTheMarkedWindowsNeedCountFutureSegments() {
        let schedule = SegmentSchedule(startNs: 0, lengthNs: 1_000_000_000)
        // m1 holds written segments 1 and 2 (0.8 s to 1.2 s); m2 at 6.5 s with 2 s each side holds
        // 5 to 9, of which only 5 is written: 4 at the segment size of 70.
        let needed = StorageBudget.bytesForMarkedWindows(
            marks: [mark("m1", at: 1.0, window: 0.2), mark("m2", at: 6.5, window: 2)], index: index(5),
            schedule: schedule, segmentBytes: 70, openBytes: 100, ownBytes: 10)
        #expect(needed == 100 + 100 + 100 + 4 * 70 + 100 + 10)
    }

    @Test func aWindowClampsAtZeroAndAtTheEndOfTime() {
        let early = mark("m1", at: 0.1, window: 5)
        #expect(early.windowStartNs == 0)
        var late = mark("m2", at: 1)
        late.captureNs = UInt64.max - 5
        #expect(late.windowEndNs == .max)
        #expect(SegmentSchedule(startNs: 100, lengthNs: 10).number(containing: 5) == 1)
        #expect(SegmentSchedule(startNs: 100, lengthNs: 10).number(containing: 125) == 3)
    }
}
