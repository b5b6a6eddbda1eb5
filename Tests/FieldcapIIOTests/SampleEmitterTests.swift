import FieldcapCore
import TestSupport
import Testing

@testable import FieldcapIIO

@Suite("IIO timeline gaps")
struct SampleEmitterTests {
    static let period = 1_000_000.0  // 1 kHz

    /// Emits samples at `times` (in periods from an arbitrary start) and returns the sequence
    /// numbers they got, the samples counted missing and the gaps.
    private func run(_ times: [Double]) -> (sequences: [UInt64], missing: Int, gaps: Int, runs: [ClosedRange<UInt64>]) {
        let drops = DropCounter()
        var emitter = SampleEmitter(periodNs: Self.period, dropCounter: drops)
        let ring = SPSCRing<CaptureRecord>(minimumCapacity: max(2, times.count))
        let start = 1_000_000_000.0
        for time in times {
            emitter.emit(
                CaptureRecord(), captureNs: Int64(start + time * Self.period), uncertaintyNs: 1_000, into: ring)
        }
        emitter.finish()
        var sequences: [UInt64] = []
        while let record = ring.pop() { sequences.append(record.sequence) }
        return (sequences, drops.count, emitter.gapEvents, drops.droppedRuns)
    }

    @Test("a tick that comes late and the one after it on time is no loss")
    func lateThenBunched() {
        // Ticks 0...9 on time, tick 10 fires 0.8 of a period late, tick 11 on time.
        let times = (0...9).map(Double.init) + [10.8] + (11...20).map(Double.init)
        let result = run(times)
        #expect(result.missing == 0)
        #expect(result.gaps == 0)
        #expect(result.sequences == Array(0...20))
    }

    @Test("a late tick after a lost one counts the lost one only")
    func lostThenLateThenBunched() {
        // Tick 10 lost, tick 11 fires 0.7 late (an hrtimer that overran), tick 12 on its grid.
        let times = (0...9).map(Double.init) + [11.7] + (12...20).map(Double.init)
        let result = run(times)
        #expect(result.missing == 1)
        #expect(result.gaps == 1)
        // Written and missing fill the timeline's 21 periods exactly.
        #expect(result.sequences.count + result.missing == 21)
        #expect(result.sequences.last == 20)
    }

    @Test("a bunch of late ticks whose last is still late is no loss either")
    func lateBunchEndingLate() {
        // Ticks 10-12 stamped together 2.6 periods late, tick 13 still 0.65 late, 14 on time.
        let times = (0...9).map(Double.init) + [12.6, 12.65, 12.7, 13.65] + (14...20).map(Double.init)
        let result = run(times)
        #expect(result.missing == 0)
        #expect(result.sequences == Array(0...20))
    }

    @Test("ticks really lost are counted, numbered before the sample that shows the timeline again")
    func realLoss() {
        let times = (0...9).map(Double.init) + (13...20).map(Double.init)
        let result = run(times)
        #expect(result.missing == 3)
        #expect(result.gaps == 1)
        #expect(result.runs == [11...13])
        #expect(result.sequences.last == 20)
    }

    @Test("a gap just before the end is counted when the stream ends")
    func gapAtTheEnd() {
        let result = run((0...9).map(Double.init) + [15])
        #expect(result.missing == 5)  // ticks 10...14
        #expect(result.gaps == 1)
    }

    @Test("a device above its rate never opens a window that counts samples it did not miss")
    func fastDevice() {
        // One gap of two periods, then samples every half period for a while.
        let times = (0...5).map(Double.init) + (0..<200).map { 7.0 + Double($0) * 0.5 }
        let result = run(times)
        #expect(result.missing == 0)
    }

    @Test(
        "under an hrtimer that fires late then catches up, missing equals the ticks really lost",
        arguments: [UInt64(1), 2, 3, 4])
    func jitteredTimeline(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var times: [Double] = []
        var lost = 0
        var previous = "on time"
        for tick in 0..<20_000 {
            let draw = Double(random.next() % 10_000) / 10_000
            let jitter = Double(random.next() % 10_000) / 10_000
            // A lost tick comes between two on-time ones (the one before it fired on time, the
            // one after is not late); a late one is followed by one back on the grid.
            if tick > 0, tick < 19_999, previous == "on time", draw < 0.03 {
                lost += 1
                previous = "lost"
            } else if previous == "on time", draw < 0.13, tick < 19_999 {
                times.append(Double(tick) + 0.65 + 0.3 * jitter)
                previous = "late"
            } else {
                times.append(Double(tick) + 0.1 * jitter)
                previous = "on time"
            }
        }
        let result = run(times)
        #expect(result.missing == lost, "seed \(seed): \(result.missing) counted, \(lost) lost")
        #expect(result.sequences.count + result.missing == 20_000)
    }
}
