import Foundation
import Synchronization
import TestSupport
import Testing
@testable import FieldcapCore

/// A simulated pair of clocks: RAW, and another clock slewed against it at a rate that may change.
final class SlewedClocks: @unchecked Sendable {
    var raw: Int64 = 1_000_000_000_000
    /// The other clock at `raw`.
    var other: Int64 = 1_000_000_000_000 - 79_900_000
    /// How much faster the other clock runs than RAW, in ppm.
    var ppm: Double = 0

    /// Advances RAW by `ns`; the other clock advances by ns * (1 + ppm/1e6).
    func advance(_ ns: Int64) {
        raw += ns
        other += ns + Int64((Double(ns) * ppm / 1e6).rounded())
    }

    /// The other clock's reading at RAW time `atRaw` (in the past or future, at the current rate).
    func otherAt(raw atRaw: Int64) -> Int64 { other + Int64((Double(atRaw - raw) * (1 + ppm / 1e6)).rounded()) }

    var reader: ClockPairReader {
        ClockPairReader(burst: 1, readRaw: { self.raw }, readOther: { self.other })
    }
}

@Suite("Clock mapping")
struct ClockMappingTests {
    @Test("before any sample nothing is mapped; with one sample, a constant offset")
    func firstSamples() {
        let mapping = ClockMapping()
        #expect(mapping.toRaw(5) == nil)
        mapping.add(ClockPairSample(otherNs: 1_000, rawNs: 1_500, bracketNs: 40))
        #expect(mapping.toRaw(2_000) == 2_500)
        #expect(mapping.snapshot?.driftPPM == 0)
    }

    @Test("samples with a wide bracket (a preempted read) are not used")
    func wideBracketIgnored() {
        let mapping = ClockMapping(maximumBracketNs: 1_000)
        #expect(mapping.add(ClockPairSample(otherNs: 0, rawNs: 100, bracketNs: 50)))
        #expect(!mapping.add(ClockPairSample(otherNs: 1_000_000, rawNs: 9_000_000, bracketNs: 5_000)))
        #expect(mapping.toRaw(1_000_000) == 1_000_100)
    }

    @Test("a slewed clock is tracked: its drift is measured and times up to a second past the last sample map to within 10 ns",
          arguments: [-500.0, -37.5, 0.0, 12.0, 500.0])
    func constantSlew(ppm: Double) {
        let clocks = SlewedClocks()
        clocks.ppm = ppm
        let mapping = ClockMapping()
        for _ in 0..<5 {
            mapping.add(clocks.reader.sample())
            clocks.advance(1_000_000_000)
        }
        mapping.add(clocks.reader.sample())
        let snapshot = mapping.snapshot!
        // RAW runs slower than the other clock by `ppm`: offset (RAW - other) falls by ppm.
        #expect(abs(snapshot.driftPPM + ppm / (1 + ppm / 1e6)) < 0.01)
        for step in stride(from: Int64(0), through: 1_000_000_000, by: 50_000_000) {
            let raw = clocks.raw + step
            let error = mapping.toRaw(clocks.otherAt(raw: raw))! - raw
            #expect(abs(error) <= 10, "\(ppm) ppm, \(step) ns after the last sample: error \(error) ns")
        }
    }

    @Test("when the slew changes, the mapping follows within one sample interval, with the error bounded by the change")
    func changingSlew() {
        let clocks = SlewedClocks()
        let mapping = ClockMapping()
        var worstAfterSettling: Int64 = 0
        for second in 0..<20 {
            clocks.ppm = second < 10 ? 100 : -200  // an NTP daemon changing its mind
            mapping.add(clocks.reader.sample())
            for step in stride(from: Int64(0), to: 1_000_000_000, by: 100_000_000) {
                let raw = clocks.raw + step
                let error = abs(mapping.toRaw(clocks.otherAt(raw: raw))! - raw)
                // Second 0 has one sample (a constant offset); seconds 10 and 11 straddle the change.
                if second != 0 && second != 10 && second != 11 { worstAfterSettling = max(worstAfterSettling, error) }
                // Right after the change the extrapolation uses the old rate: at most 300 ppm of a second.
                #expect(error <= 300_000 + 10)
            }
            clocks.advance(1_000_000_000)
        }
        #expect(worstAfterSettling <= 10)
    }

    @Test("the uncertainty bound holds: reads delayed anywhere inside their bracket never put the mapping further from the truth than it says",
          arguments: [-500.0, 0.0, 250.0])
    func uncertaintyBound(ppm: Double) {
        var generator = SplitMix64(seed: UInt64(bitPattern: Int64(ppm * 1000)) &+ 7)
        let clocks = SlewedClocks()
        clocks.ppm = ppm
        let mapping = ClockMapping()
        var worstRatio = 0.0
        for _ in 0..<30 {
            // A bracket of 100 ns to 15 µs, with the other clock read anywhere inside it.
            let width = Int64(generator.next() % 15_000) + 100
            let readAt = Int64(generator.next() % UInt64(width + 1))
            let other = clocks.otherAt(raw: clocks.raw + readAt)
            mapping.add(ClockPairSample(otherNs: other, rawNs: clocks.raw + width / 2, bracketNs: width))
            let snapshot = mapping.snapshot!
            for step in stride(from: Int64(-900_000_000), through: 1_500_000_000, by: 100_000_000) {
                let raw = clocks.raw + step
                let otherNs = clocks.otherAt(raw: raw)
                let error = abs(snapshot.toRaw(otherNs) - raw)
                let bound = snapshot.uncertaintyNs(at: otherNs)
                #expect(error <= bound + 1, "\(ppm) ppm, \(step) ns from the latest sample: error \(error) ns, bound \(bound) ns")
                worstRatio = max(worstRatio, Double(error) / Double(bound))
            }
            clocks.advance(1_000_000_000 + Int64(generator.next() % 50_000_000))
        }
        // The bound is not vacuous: the worst case comes within a factor of 20 of it.
        #expect(worstRatio > 0.05)
        // And it stays small: 1.5 s past the latest sample it is still under 30 µs.
        let snapshot = mapping.snapshot!
        #expect(snapshot.uncertaintyNs(at: snapshot.latestOtherNs + 1_500_000_000) < 30_000)
    }

    @Test("a step of the other clock (date -s) restarts the mapping from the next sample instead of bending the slope")
    func step() {
        let clocks = SlewedClocks()
        clocks.ppm = 40
        let mapping = ClockMapping()
        for _ in 0..<3 {
            mapping.add(clocks.reader.sample())
            clocks.advance(100_000_000)
        }
        #expect(mapping.steps == 0)
        clocks.other += 3_600_000_000_000  // an hour forward
        mapping.add(clocks.reader.sample())
        #expect(mapping.steps == 1)
        // Right after the step: a constant offset from the new sample, no bogus slope.
        let raw = clocks.raw + 50_000_000
        #expect(abs(mapping.toRaw(clocks.otherAt(raw: raw))! - raw) <= 2_000)
        clocks.advance(100_000_000)
        mapping.add(clocks.reader.sample())
        #expect(mapping.steps == 1)
        #expect(abs(mapping.snapshot!.driftPPM + 40) < 0.5)
    }

    @Test("readers never see a half-written sample")
    func seqlockConsistency() {
        let mapping = ClockMapping(maximumBracketNs: .max)
        let stop = Atomic<Bool>(false)
        let adder = Thread {
            var other: Int64 = 1
            while !stop.load(ordering: .relaxed) {
                // Each sample's fields are tied together, so a torn read shows.
                mapping.add(ClockPairSample(otherNs: other, rawNs: other + other / 1000, bracketNs: other % 997))
                other += 1
            }
        }
        adder.start()
        var torn = 0
        var reads = 0
        let deadline = Date().addingTimeInterval(1)
        while Date() < deadline {
            guard let snapshot = mapping.snapshot else { continue }
            reads += 1
            if snapshot.latestOffsetNs != snapshot.latestOtherNs / 1000 || snapshot.latestBracketNs != snapshot.latestOtherNs % 997
                || snapshot.previousOffsetNs != snapshot.previousOtherNs / 1000
            {
                torn += 1
            }
        }
        stop.store(true, ordering: .relaxed)
        #expect(reads > 100)
        #expect(torn == 0)
    }

    @Test("on this host, CLOCK_MONOTONIC maps onto CLOCK_MONOTONIC_RAW as a direct paired read says")
    func hostClocks() {
        let reader = ClockPairReader.host(CLOCK_MONOTONIC)
        let mapping = ClockMapping(maximumBracketNs: 1_000_000)
        mapping.add(reader.sample())
        usleep(200_000)
        mapping.add(reader.sample())
        usleep(100_000)
        let check = reader.sample()
        let error = mapping.toRaw(check.otherNs)! - check.rawNs
        // Bounded by the brackets (tens of ns when the machine is quiet; generous for a busy one).
        #expect(abs(error) <= 200_000, "mapped error \(error) ns, bracket \(check.bracketNs) ns")
        #expect(abs(mapping.snapshot!.driftPPM) < 1000)
    }
}
