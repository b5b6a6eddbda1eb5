import Foundation
import Testing

@testable import FieldcapSegments

@Suite struct StorageBudgetTests {
    /// An index of `sizes.count` finished segments of 1 s each, starting at 0.
    func index(_ sizes: [UInt64], kept: Set<Int> = []) -> RecordingIndex {
        var index = RecordingIndex(
            fieldcapVersion: "test", hostId: "h", segmentSeconds: 1, maxStorageBytes: nil, keepSeconds: nil,
            streams: [])
        for (offset, size) in sizes.enumerated() {
            var segment = RecordingIndex.Segment(
                number: offset + 1, directory: "\(offset + 1)", state: .complete,
                startMonotonicRawNs: UInt64(offset) * 1_000_000_000,
                endMonotonicRawNs: UInt64(offset + 1) * 1_000_000_000,
                startUtc: "", endUtc: "")
            segment.bytes = size
            if kept.contains(offset + 1) { segment.kept = "holds x" }
            index.segments.append(segment)
        }
        return index
    }

    @Test func keepsRoomForTheSegmentBeingWritten() {
        let budget = StorageBudget(maxBytes: 350)
        // 4 x 100 finished, 10 written so far of the next: room for 3 finished + one like them.
        let deletions = budget.deletions(
            in: index([100, 100, 100, 100]), openBytes: 10, nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1, 2])
        #expect(deletions.allSatisfy { $0.reason == "max" })
    }

    @Test func theRecordingsOwnFilesComeOnTopOfTheRoomForTheSegmentBeingWritten() {
        let budget = StorageBudget(maxBytes: 500)
        // A reserve of 170 beside 3 x 100 finished and 10 written of the next: 170 + 300 + room
        // for one like them is 570, so the oldest goes (the reserve no longer stands in for the
        // segment it will not hold).
        let deletions = budget.deletions(
            in: index([100, 100, 100]), openBytes: 10, ownBytes: 170, nowNs: 0, maxLabel: "max", keepLabel: "")
        #expect(deletions.map(\.number) == [1])
    }

    @Test func nothingGoesWhileWithinTheBudget() {
        let budget = StorageBudget(maxBytes: 500)
        #expect(
            budget.deletions(in: index([100, 100, 100]), openBytes: 50, nowNs: 0, maxLabel: "", keepLabel: "").isEmpty)
    }

    @Test func aSegmentNotAllFieldcapsIsKeptAndTheNextOneGoes() {
        let budget = StorageBudget(maxBytes: 250)
        let deletions = budget.deletions(
            in: index([100, 100, 100], kept: [1]), openBytes: 0, nowNs: 0, maxLabel: "m", keepLabel: "")
        #expect(deletions.map(\.number) == [2, 3])
    }

    @Test func keepDeletesWhatEndedTooLongAgo() {
        let budget = StorageBudget(keepNs: 2_000_000_000)
        // Now is 4.5 s: segments ending at 1 s and 2 s ended more than 2 s ago.
        let deletions = budget.deletions(
            in: index([1, 1, 1, 1]), openBytes: 0, nowNs: 4_500_000_000, maxLabel: "", keepLabel: "keep")
        #expect(deletions.map(\.number) == [1, 2])
        #expect(deletions.allSatisfy { $0.reason == "keep" })
    }

    @Test func theIndexReadsBackWhatWasWritten() throws {
        var written = index([100, 200])
        written.segments[0].state = .deleted
        written.segments[0].deleted = RecordingIndex.Deletion(
            utc: "2026-11-24T00:00:00.000Z", reason: "--max-storage 1G")
        written.segments[1].streams = [
            "cam0": RecordingIndex.StreamCounts(
                records: 30, firstCaptureNs: 5, lastCaptureNs: 9, firstSequence: 0, lastSequence: 31, missing: 2,
                firstAfterStartSeconds: 0.001)
        ]
        let directory = NSTemporaryDirectory() + "/fieldcap-index-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try written.write(directory: directory)
        #expect(RecordingIndex.read(directory: directory) == written)
        let text = try String(contentsOfFile: "\(directory)/recording.json", encoding: .utf8)
        #expect(text.contains("\"format\" : \"fieldcap-recording/0.1\""))
        #expect(text.contains("\"first_after_start_seconds\""))
        #expect(written.presentSegments.map(\.number) == [2])
    }
}
