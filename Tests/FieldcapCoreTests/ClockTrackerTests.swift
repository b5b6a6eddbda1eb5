import TestSupport
import Testing

@testable import FieldcapCore

/// Another clock against RAW with a known truth: piecewise-constant rates (NTP frequency
/// updates, slews) and steps (the clock set), continuous between steps.
struct PiecewiseClock {
    /// From `rawNs` on, the other clock runs `ppm` faster than RAW, starting from `otherNs`.
    private var pieces: [(rawNs: Int64, otherNs: Int64, ppm: Double)]

    init(startRawNs: Int64 = 1_000_000_000_000, offsetNs: Int64 = -79_900_000, ppm: Double = 0) {
        pieces = [(startRawNs - 100_000_000_000, startRawNs - 100_000_000_000 - offsetNs, ppm)]
    }

    func other(atRaw raw: Int64) -> Int64 {
        let piece = pieces.last { $0.rawNs <= raw } ?? pieces[0]
        let elapsed = raw - piece.rawNs
        return piece.otherNs + elapsed + Int64((Double(elapsed) * piece.ppm / 1e6).rounded())
    }

    /// RAW at which the other clock reads `other` (the inverse, by bisection).
    func raw(atOther other: Int64) -> Int64 {
        var low = pieces[0].rawNs
        var high = Int64(4_000_000_000_000)
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if self.other(atRaw: middle) <= other { low = middle } else { high = middle }
        }
        return abs(self.other(atRaw: high) - other) < abs(self.other(atRaw: low) - other) ? high : low
    }

    /// From `rawNs` on, the rate is `ppm`.
    mutating func changeRate(atRaw rawNs: Int64, to ppm: Double) {
        pieces.append((rawNs, other(atRaw: rawNs), ppm))
    }

    /// At `rawNs` the clock is set `byNs` forward.
    mutating func step(atRaw rawNs: Int64, by byNs: Int64) {
        pieces.append((rawNs, other(atRaw: rawNs) + byNs, pieces.last!.ppm))
    }

    /// A clock pair read at `rawNs`: a bracket `widthNs` wide, the other clock read `where` (0...1)
    /// into it.
    func pair(atRaw rawNs: Int64, widthNs: Int64 = 300, where fraction: Double = 0.5) -> ClockPairSample {
        let other = self.other(atRaw: rawNs + Int64(Double(widthNs) * fraction))
        return ClockPairSample(otherNs: other, rawNs: rawNs + widthNs / 2, bracketNs: widthNs)
    }
}

@Suite("Clock tracker")
struct ClockTrackerTests {
    /// A camera's cadence: a pair at every dequeue, `delayNs` after the kernel stamped the frame.
    /// Returns each frame's error and uncertainty, mapping pending frames after the next pair.
    static func camera(
        _ clock: PiecewiseClock, frames: Int, periodNs: Int64 = 33_333_333, delayNs: (Int) -> Int64,
        startRawNs: Int64 = 1_000_000_000_000
    ) -> [(errorNs: Int64, uncertaintyNs: Int64, wasPending: Bool)] {
        var tracker = ClockTracker()
        tracker.add(clock.pair(atRaw: startRawNs - 50_000_000))
        var results: [(Int64, Int64, Bool)] = []
        var held: (truth: Int64, kernel: Int64)?
        for frame in 0..<frames {
            let truth = startRawNs + Int64(frame) * periodNs
            let kernel = clock.other(atRaw: truth)
            let dequeue = truth + delayNs(frame)
            tracker.add(clock.pair(atRaw: dequeue, widthNs: 200 + Int64(frame % 7) * 50, where: Double(frame % 5) / 4))
            if let pending = held {
                switch tracker.map(pending.kernel)! {
                case .mapped(let mapped): results.append((mapped.rawNs - pending.truth, mapped.uncertaintyNs, true))
                default:
                    let mapped = tracker.mapNow(pending.kernel)!
                    results.append((mapped.rawNs - pending.truth, mapped.uncertaintyNs, true))
                }
                held = nil
            }
            switch tracker.map(kernel)! {
            case .mapped(let mapped): results.append((mapped.rawNs - truth, mapped.uncertaintyNs, false))
            case .pending: held = (truth, kernel)
            case .ambiguous: Issue.record("a monotonic clock cannot step")
            }
        }
        return results
    }

    @Test(
        "a steady slew maps every frame to within a few ns, with an honest bound of a few µs",
        arguments: [-500.0, 0, 37.5, 500])
    func steadySlew(ppm: Double) {
        let clock = PiecewiseClock(ppm: ppm)
        let results = Self.camera(clock, frames: 300) { 1_000_000 + Int64($0 % 9) * 400_000 }
        for (index, result) in results.enumerated() {
            #expect(
                abs(result.errorNs) <= result.uncertaintyNs,
                "frame \(index): error \(result.errorNs) ns, bound \(result.uncertaintyNs) ns")
            #expect(abs(result.errorNs) < 500)
            if index > 2 { #expect(result.uncertaintyNs < 3_000) }
        }
    }

    @Test(
        "through a rate step anywhere in a frame interval, every frame stays within its bound and the aim",
        arguments: [(500.0, 5_000 as Int64), (83_333.0, 100_000), (-83_333.0, 100_000), (100_000.0, 100_000)])
    func rateStep(ppm: Double, aimNs: Int64) {
        // The step lands at 40 positions across one frame interval, frames dequeued 1–17 ms late.
        for position in 0..<40 {
            var clock = PiecewiseClock(ppm: 20)
            let stepRaw = 1_000_000_000_000 + 10 * 33_333_333 + Int64(position) * 833_333
            clock.changeRate(atRaw: stepRaw, to: ppm)
            let results = Self.camera(clock, frames: 40) { frame in
                [1_000_000, 17_000_000, 3_900_000, 800_000][frame % 4]
            }
            for (index, result) in results.enumerated() {
                #expect(
                    abs(result.errorNs) <= result.uncertaintyNs,
                    """
                    step at +\(position * 833) µs, frame \(index): error \
                    \(result.errorNs) ns above bound \(result.uncertaintyNs) ns
                    """
                )
                #expect(
                    abs(result.errorNs) <= aimNs,
                    "step at +\(position * 833) µs, frame \(index): error \(result.errorNs) ns")
            }
            #expect(results.count == 40)
        }
    }

    @Test("a frame whose interval holds a rate change waits for the next pair; mapped now, its bound covers the change")
    func pendingAndMapNow() {
        var clock = PiecewiseClock()
        var tracker = ClockTracker()
        let start: Int64 = 1_000_000_000_000
        for index in 0..<5 { tracker.add(clock.pair(atRaw: start + Int64(index) * 33_000_000)) }
        clock.changeRate(atRaw: start + 4 * 33_000_000 + 20_000_000, to: 83_333)
        let truth = start + 4 * 33_000_000 + 25_000_000
        let kernel = clock.other(atRaw: truth)
        tracker.add(clock.pair(atRaw: start + 5 * 33_000_000))
        #expect(tracker.rateChanges == 1)
        let first = tracker.map(kernel)
        #expect(first == .pending)
        let now = tracker.mapNow(kernel)!
        #expect(abs(now.rawNs - truth) <= now.uncertaintyNs)
        // The change was 13 ms before the pair: a bound of that order, not the steady-state one.
        #expect(now.uncertaintyNs > 10_000)
        tracker.add(clock.pair(atRaw: start + 6 * 33_000_000))
        guard case .mapped(let later) = tracker.map(kernel)! else {
            Issue.record("still pending after the next pair")
            return
        }
        #expect(abs(later.rawNs - truth) <= later.uncertaintyNs)
        #expect(later.uncertaintyNs < 3_000)
        #expect(tracker.worstUncertaintyNs == now.uncertaintyNs)
    }

    @Test("a step of the clock (date -s) is told from a rate change: a time in its interval maps either side")
    func clockStep() {
        var clock = PiecewiseClock()
        var tracker = ClockTracker()
        let start: Int64 = 1_000_000_000_000
        for index in 0..<4 { tracker.add(clock.pair(atRaw: start + Int64(index) * 100_000_000)) }
        clock.step(atRaw: start + 350_000_000, by: 2_000_000_000)
        tracker.add(clock.pair(atRaw: start + 400_000_000))
        #expect(tracker.steps == 1)
        #expect(tracker.rateChanges == 0)
        let before = start + 320_000_000
        let after = start + 380_000_000
        guard case .ambiguous(let early, _) = tracker.map(clock.other(atRaw: before))!,
            case .ambiguous(_, let late) = tracker.map(clock.other(atRaw: after))!
        else {
            Issue.record("times in a step's interval should be ambiguous")
            return
        }
        #expect(abs(early.rawNs - before) <= early.uncertaintyNs)
        #expect(abs(late.rawNs - after) <= late.uncertaintyNs)
        // Times outside the interval map on their own side without doubt.
        guard case .mapped(let old) = tracker.map(clock.other(atRaw: start + 250_000_000))! else {
            Issue.record("a time before the step's interval should map")
            return
        }
        #expect(abs(old.rawNs - (start + 250_000_000)) <= max(old.uncertaintyNs, 10))
    }

    @Test("pairs with a wide bracket (a preempted read) are refused; going backwards too")
    func refusedPairs() {
        var tracker = ClockTracker(maximumBracketNs: 1_000)
        let accepted = tracker.add(ClockPairSample(otherNs: 0, rawNs: 100, bracketNs: 50))
        let wide = tracker.add(ClockPairSample(otherNs: 1_000_000, rawNs: 9_000_000, bracketNs: 5_000))
        let backwards = tracker.add(ClockPairSample(otherNs: -5, rawNs: 95, bracketNs: 50))
        #expect(accepted && !wide && !backwards)
        #expect(tracker.pairsRefused == 2)
        guard case .mapped(let mapped) = tracker.map(0)! else {
            Issue.record("the first pair maps its own time")
            return
        }
        #expect(mapped.rawNs == 100)
    }

    @Test("nothing maps before the first pair; with one pair, a time away from it carries the kernel's rate limit")
    func firstPair() {
        var tracker = ClockTracker()
        let nothing = tracker.map(5)
        let nothingNow = tracker.mapNow(5)
        #expect(nothing == nil)
        #expect(nothingNow == nil)
        tracker.add(ClockPairSample(otherNs: 1_000_000, rawNs: 1_500_000, bracketNs: 40))
        guard case .mapped(let mapped) = tracker.map(11_000_000)! else {
            Issue.record("one pair maps with an offset")
            return
        }
        #expect(mapped.rawNs == 11_500_000)
        #expect(mapped.uncertaintyNs >= 1_100_000)
        #expect(tracker.driftPPM == nil)
    }

    @Test(
        """
        random clocks: rates up to the kernel's limit changing at \
        random, brackets of random width; no frame outside its bound
        """,
        arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomClocks(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var clock = PiecewiseClock(ppm: (Double.random(in: 0..<1, using: &random) * 2 - 1) * 500)
        let start: Int64 = 1_000_000_000_000
        var at = start
        // A change at most every two frame intervals (the model's assumption).
        while at < start + 20_000_000_000 {
            at += 70_000_000 + Int64.random(in: 0...2_000_000_000, using: &random)
            let ppm =
                Double.random(in: 0..<1, using: &random) < 0.3
                ? (Double.random(in: 0..<1, using: &random) * 2 - 1) * 110_000
                : (Double.random(in: 0..<1, using: &random) * 2 - 1) * 500
            clock.changeRate(atRaw: at, to: ppm)
        }
        var tracker = ClockTracker()
        var held: (truth: Int64, kernel: Int64)?
        var checked = 0
        func check(_ mapped: ClockTracker.Mapped, _ truth: Int64) {
            #expect(
                abs(mapped.rawNs - truth) <= mapped.uncertaintyNs,
                "seed \(seed): error \(mapped.rawNs - truth) ns above \(mapped.uncertaintyNs) ns")
            checked += 1
        }
        tracker.add(clock.pair(atRaw: start - 10_000_000))
        for frame in 0..<600 {
            let truth = start + Int64(frame) * 33_333_333
            let kernel = clock.other(atRaw: truth)
            let width = 150 + Int64.random(in: 0...2_000, using: &random)
            tracker.add(
                clock.pair(
                    atRaw: truth + 200_000 + Int64.random(in: 0...15_000_000, using: &random), widthNs: width,
                    where: Double.random(in: 0..<1, using: &random)))
            if let pending = held {
                if case .mapped(let mapped) = tracker.map(pending.kernel)! {
                    check(mapped, pending.truth)
                } else {
                    check(tracker.mapNow(pending.kernel)!, pending.truth)
                }
                held = nil
            }
            switch tracker.map(kernel)! {
            case .mapped(let mapped): check(mapped, truth)
            case .pending: held = (truth, kernel)
            case .ambiguous: Issue.record("no steps here")
            }
        }
        #expect(checked >= 599)
        #expect(tracker.rateChanges > 0)
    }
}

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Clock tracker on this host")
struct HostClockTrackerTests {
    @Test("CLOCK_MONOTONIC maps onto CLOCK_MONOTONIC_RAW as a direct paired read says, within the bound it gives")
    func hostClocks() {
        let reader = ClockPairReader.host(CLOCK_MONOTONIC, burst: 2)
        var tracker = ClockTracker(maximumBracketNs: 1_000_000)
        tracker.add(reader.sample())
        usleep(200_000)
        tracker.add(reader.sample())
        usleep(100_000)
        let check = reader.sample()
        tracker.add(reader.sample())
        guard case .mapped(let mapped)? = tracker.map(check.otherNs) else {
            Issue.record("a time between two pairs of a steady clock maps at once")
            return
        }
        let error = mapped.rawNs - check.rawNs
        // Within both brackets (tens of ns on a quiet machine; generous on a busy one).
        #expect(
            abs(error) <= mapped.uncertaintyNs + (check.bracketNs + 1) / 2,
            "error \(error) ns, bound \(mapped.uncertaintyNs) ns")
        #expect(abs(tracker.driftPPM ?? 1e9) < 1000)
    }
}
