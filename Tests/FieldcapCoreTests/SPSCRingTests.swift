import Foundation
import Testing

@testable import FieldcapCore

/// A 64-byte record, the size a capture record has.
struct Record64: BitwiseCopyable, Equatable {
    var sequence: UInt64
    var check: UInt64
    var payload: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)

    init(_ sequence: UInt64) {
        self.sequence = sequence
        self.check = sequence &* 0x9E37_79B9_7F4A_7C15
        payload.0 = ~sequence
        payload.5 = sequence ^ 0xABCD
    }

    static func == (a: Record64, b: Record64) -> Bool {
        a.sequence == b.sequence && a.check == b.check && a.payload.0 == b.payload.0 && a.payload.5 == b.payload.5
    }

    var isIntact: Bool { self == Record64(sequence) }
}

@Suite("SPSC ring")
struct SPSCRingTests {
    @Test("capacity rounds up to a power of two")
    func capacity() {
        #expect(SPSCRing<Record64>(minimumCapacity: 1).capacity == 2)
        #expect(SPSCRing<Record64>(minimumCapacity: 1000).capacity == 1024)
        #expect(SPSCRing<Record64>(minimumCapacity: 1024).capacity == 1024)
        #expect(MemoryLayout<Record64>.size == 64)
    }

    @Test("a full ring drops, counts each drop and which records they were, and keeps what it holds")
    func dropsWhenFull() {
        let ring = SPSCRing<Record64>(minimumCapacity: 8)
        var accepted: [UInt64] = []
        for sequence in UInt64(0)..<20 where ring.push(Record64(sequence), sequence: sequence) {
            accepted.append(sequence)
        }
        #expect(accepted == Array(0..<8))
        #expect(ring.drops.count == 12)
        #expect(ring.drops.firstAndLast! == (8, 19))
        #expect(ring.drops.distinctRuns == 1)
        var seen: [UInt64] = []
        ring.consume(limit: 3) { seen += $0.map(\.sequence) }
        // Room again: a new record goes in; the next drop starts a second run.
        #expect(ring.push(Record64(20), sequence: 20))
        for sequence in UInt64(21)..<26 { ring.push(Record64(sequence), sequence: sequence) }
        #expect(ring.drops.count == 12 + 3)
        #expect(ring.drops.firstAndLast! == (8, 25))
        #expect(ring.drops.distinctRuns == 2)
        #expect(ring.drops.droppedRuns == [8...19, 23...25])
        ring.consume { seen += $0.map(\.sequence) }
        #expect(seen == Array(0..<8) + [20, 21, 22])
        #expect(ring.count == 0)
        #expect(ring.pop() == nil)
    }

    @Test("batches that cross the end of the ring come as two runs, in order")
    func wrapAround() {
        let ring = SPSCRing<Record64>(minimumCapacity: 8)
        var next: UInt64 = 0
        var expected: UInt64 = 0
        for round in 0..<50 {
            for _ in 0..<(round % 8 + 1) where ring.tryPush(Record64(next)) { next += 1 }
            var runs = 0
            ring.consume(limit: round % 5 + 1) { run in
                runs += 1
                for record in run {
                    #expect(record.sequence == expected && record.isIntact)
                    expected += 1
                }
            }
            #expect(runs <= 2)
        }
        ring.consume { run in for record in run { #expect(record.sequence == expected); expected += 1 } }
        #expect(expected == next)
    }

    @Test("two threads: FIFO, nothing lost, nothing duplicated, across many wrap-arounds", arguments: [2, 64, 4096])
    func stress(capacity: Int) {
        let ring = SPSCRing<Record64>(minimumCapacity: capacity)
        let total: UInt64 = 2_000_000
        let producer = Thread {
            var sequence: UInt64 = 0
            while sequence < total {
                if ring.tryPush(Record64(sequence)) { sequence += 1 } else { sched_yield() }
            }
        }
        producer.start()
        var expected: UInt64 = 0
        var corrupt = 0
        var outOfOrder = 0
        var batch = 0
        while expected < total {
            batch = batch % 97 + 1
            let taken = ring.consume(limit: batch) { run in
                for record in run {
                    if !record.isIntact { corrupt += 1 }
                    if record.sequence != expected { outOfOrder += 1 }
                    expected = record.sequence + 1
                }
            }
            if taken == 0 { sched_yield() }
        }
        #expect(expected == total)
        #expect(corrupt == 0)
        #expect(outOfOrder == 0)
        #expect(ring.count == 0)
        #expect(ring.drops.count == 0)
    }

    @Test("more drop runs than the table holds: the last run spans the rest, and the count stays exact")
    func dropRunOverflow() {
        let drops = DropCounter(runCapacity: 3)
        for sequence: UInt64 in [1, 2, 5, 9, 10, 20, 30] { drops.record(sequence) }
        #expect(drops.count == 7)
        #expect(drops.distinctRuns == 5)
        #expect(drops.droppedRuns == [1...2, 5...5, 9...30])
        #expect(drops.runsTruncated)
        #expect(drops.json["records_truncated"] == true)
        // A table just full, its last run growing at its end, is still exact.
        let full = DropCounter(runCapacity: 3)
        for sequence: UInt64 in [1, 5, 9, 10, 11] { full.record(sequence) }
        #expect(full.droppedRuns == [1...1, 5...5, 9...11])
        #expect(!full.runsTruncated)
        #expect(full.json["records_truncated"] == nil)
    }

    @Test("a run counted at once is the same as its records counted one by one")
    func dropRunsAtOnce() {
        let oneByOne = DropCounter(runCapacity: 3)
        let atOnce = DropCounter(runCapacity: 3)
        let runs: [(UInt64, Int)] = [(1, 2), (3, 4), (10, 1), (20, 1000), (2000, 3), (3000, 0), (4000, 7)]
        for (first, count) in runs {
            for offset in 0..<count { oneByOne.record(first + UInt64(offset)) }
            atOnce.record(from: first, count: count)
        }
        #expect(atOnce.count == oneByOne.count)
        #expect(atOnce.distinctRuns == oneByOne.distinctRuns)
        #expect(atOnce.droppedRuns == oneByOne.droppedRuns)
        #expect(atOnce.firstAndLast! == oneByOne.firstAndLast!)
        #expect(atOnce.droppedRuns == [1...6, 10...10, 20...4006])
    }

    @Test("a producer whose consumer stalls never waits: it drops exactly what does not fit")
    func producerNeverWaits() {
        let ring = SPSCRing<Record64>(minimumCapacity: 1024)
        let total: UInt64 = 100_000
        var pushed = 0
        for sequence in 0..<total where ring.push(Record64(sequence), sequence: sequence) { pushed += 1 }
        #expect(pushed == 1024)
        #expect(ring.drops.count == Int(total) - 1024)
        #expect(ring.drops.firstAndLast! == (1024, total - 1))
    }
}
