import FieldcapCore
import Foundation
import SyncField
import Synchronization
import Testing

@testable import FieldcapSegments

/// A segment's sink that keeps what it was given.
private final class MemorySink: RecordSink, @unchecked Sendable {
    let number: Int
    var records: [(stream: Int, sequence: UInt64, captureNs: UInt64, frameNumber: Int)] = []
    var syncs = 0
    var closed = false
    init(number: Int) { self.number = number }
    func open(streams: [StreamDescriptor]) throws {}
    func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws -> Bool {
        records.append((stream, record.sequence, record.captureNs, frameNumber))
        return true
    }
    func sync(streams: [Int]) throws { syncs += 1 }
    func close() throws -> [String: Int] {
        closed = true
        var counts: [String: Int] = [:]
        for record in records { counts["s\(record.stream)", default: 0] += 1 }
        return counts
    }
}

/// A store that keeps its segments in memory and says what happened, in order.
private final class MemoryStore: SegmentStore, @unchecked Sendable {
    let state = Mutex<(opened: [Int: MemorySink], finished: [FinishedSegment], final: [Int], discarded: [Int])>(
        ([:], [], [], []))
    func openSegment(number: Int, startNs: UInt64, endNs: UInt64, streams: [StreamDescriptor]) throws -> RecordSink {
        let sink = MemorySink(number: number)
        state.withLock { $0.opened[number] = sink }
        return sink
    }
    func closeSegment(_ segment: FinishedSegment, sink: RecordSink, final: Bool) throws -> [String: Int] {
        let counts = try sink.close()
        state.withLock {
            $0.finished.append(segment)
            if final { $0.final.append(segment.number) }
        }
        return counts
    }
    func discardSegment(number: Int, sink: RecordSink) {
        _ = try? sink.close()
        state.withLock { $0.discarded.append(number) }
    }
    func waitFor(segment number: Int) {
        for _ in 0..<2000 where state.withLock({ $0.opened[number] == nil }) { usleep(1000) }
    }
    func waitForFinished(_ count: Int) {
        for _ in 0..<2000 where state.withLock({ $0.finished.count < count }) { usleep(1000) }
    }
}

private func record(sequence: UInt64, at captureNs: UInt64) -> CaptureRecord {
    var record = CaptureRecord()
    record.sequence = sequence
    record.captureNs = captureNs
    return record
}

private let streams = [
    StreamDescriptor(id: "s0", kind: .video, nominalRate: 10, device: "synthetic:10"),
    StreamDescriptor(id: "s1", kind: .sensor, channels: ["x"], nominalRate: 100, device: "synthetic:100"),
]

@Suite struct SegmentingSinkTests {
    @Test func eachRecordGoesIntoTheSegmentItsCaptureTimeFallsIn() throws {
        let store = MemoryStore()
        // Segments of 1 s from t = 10 s.
        let sink = SegmentingSink(
            schedule: SegmentSchedule(startNs: 10_000_000_000, lengthNs: 1_000_000_000), store: store)
        try sink.open(streams: streams)
        var sequences = [UInt64](repeating: 0, count: 2)
        // Three seconds of both streams: the camera every 100 ms, the sensor every 10 ms; the
        // records written in capture order per stream, the streams interleaved.
        for second in 0..<3 {
            store.waitFor(segment: second + 1)
            for tick in 0..<100 {
                let at = UInt64(10_000_000_000 + second * 1_000_000_000 + tick * 10_000_000)
                if tick % 10 == 0 {
                    try sink.write(record(sequence: sequences[0], at: at), frame: nil, stream: 0, frameNumber: -1)
                    sequences[0] += 1
                }
                try sink.write(record(sequence: sequences[1], at: at), frame: nil, stream: 1, frameNumber: -1)
                sequences[1] += 1
            }
            store.waitForFinished(second)
        }
        store.waitFor(segment: 4)
        let totals = try sink.close()
        #expect(totals == ["s0": 30, "s1": 300])
        let state = store.state.withLock { $0 }
        #expect(state.finished.map(\.number) == [1, 2, 3])
        #expect(state.final == [3])
        // Segment 4 was made ready but nothing went into it.
        #expect(state.discarded == [4])
        for number in 1...3 {
            let written = state.opened[number]!.records
            let start = UInt64(10_000_000_000 + (number - 1) * 1_000_000_000)
            #expect(written.allSatisfy { $0.captureNs >= start && $0.captureNs < start + 1_000_000_000 })
            // Frame numbers start again in each segment, per stream.
            #expect(written.filter { $0.stream == 0 }.map(\.frameNumber) == Array(0..<10))
            #expect(written.filter { $0.stream == 1 }.map(\.frameNumber) == Array(0..<100))
            let tallies = state.finished.first { $0.number == number }!.tallies
            #expect(tallies[0].records == 10 && tallies[1].records == 100)
            #expect(tallies[0].firstSequence == UInt64((number - 1) * 10))
            #expect(tallies[0].missing == 0)
        }
    }

    @Test func gapsCountWhereTheRecordAfterThemWent() throws {
        let store = MemoryStore()
        let sink = SegmentingSink(schedule: SegmentSchedule(startNs: 0, lengthNs: 1_000_000_000), store: store)
        try sink.open(streams: [streams[0]])
        store.waitFor(segment: 2)
        try sink.write(record(sequence: 0, at: 100_000_000), frame: nil, stream: 0, frameNumber: -1)
        try sink.write(record(sequence: 3, at: 400_000_000), frame: nil, stream: 0, frameNumber: -1)
        try sink.write(record(sequence: 9, at: 1_000_000_000), frame: nil, stream: 0, frameNumber: -1)
        _ = try sink.close()
        let finished = store.state.withLock { $0.finished }.sorted { $0.number < $1.number }
        #expect(finished.map { $0.tallies[0].missing } == [2, 5])
        #expect(finished[0].tallies[0].missingRuns == [1...2])
        #expect(finished[1].tallies[0].missingRuns == [4...8])
        // The cut is exactly on the boundary: the frame captured at 1 s opens segment 2.
        #expect(finished[1].tallies[0].firstCaptureNs == 1_000_000_000)
    }

    @Test("more gaps in a segment than its table of runs holds: the count stays exact, the sidecar is told")
    func gapsBeyondTheTableOfRuns() throws {
        let store = MemoryStore()
        let sink = SegmentingSink(schedule: SegmentSchedule(startNs: 0, lengthNs: 1_000_000_000), store: store)
        try sink.open(streams: [streams[0]])
        store.waitFor(segment: 2)
        // Segment 1: every other record lost, more runs than the table holds; segment 2: one gap.
        let gaps = SegmentStreamTally.runCapacity + 10
        for index in 0...gaps {
            try sink.write(
                record(sequence: UInt64(2 * index), at: UInt64(index) * 100_000), frame: nil, stream: 0, frameNumber: -1
            )
        }
        let next = UInt64(2 * gaps)
        try sink.write(record(sequence: next + 1, at: 1_000_000_000), frame: nil, stream: 0, frameNumber: -1)
        try sink.write(record(sequence: next + 5, at: 1_100_000_000), frame: nil, stream: 0, frameNumber: -1)
        _ = try sink.close()
        let finished = store.state.withLock { $0.finished }.sorted { $0.number < $1.number }
        let full = finished[0].tallies[0]
        #expect(full.missing == gaps)
        #expect(full.runsTruncated)
        #expect(full.missingRuns.count == SegmentStreamTally.runCapacity)
        #expect(full.missingRuns.prefix(3) == [1...1, 3...3, 5...5])
        // The last run spans the rest, records delivered between them included.
        #expect(full.missingRuns.last == UInt64(2 * SegmentStreamTally.runCapacity - 1)...UInt64(2 * gaps - 1))
        #expect(finished[1].tallies[0].missingRuns == [(next + 2)...(next + 4)])
        #expect(!finished[1].tallies[0].runsTruncated)
    }

    @Test func aStreamWithNothingToWriteLeavesASegmentOnceItIsLate() throws {
        let store = MemoryStore()
        // Segments of 50 ms from now, a stream late after 10 ms without records.
        let now = MonotonicClock.now()
        let sink = SegmentingSink(
            schedule: SegmentSchedule(startNs: now, lengthNs: 50_000_000), store: store, lateNs: 10_000_000)
        try sink.open(streams: streams)
        store.waitFor(segment: 2)
        // Only the sensor writes: the camera is silent, and moves on at its syncs.
        var sequence: UInt64 = 0
        while MonotonicClock.now() < now + 300_000_000 {
            let at = MonotonicClock.now()
            try sink.write(record(sequence: sequence, at: at), frame: nil, stream: 1, frameNumber: -1)
            sequence += 1
            try sink.sync(streams: [0, 1])
            usleep(2000)
        }
        _ = try sink.close()
        let state = store.state.withLock { $0 }
        // Segments kept closing although one stream never wrote a record.
        #expect(state.finished.count >= 3)
        #expect(state.finished.reduce(0) { $0 + $1.tallies[1].records } == Int(sequence))
        #expect(state.finished.allSatisfy { $0.tallies[0].records == 0 })
    }
}
