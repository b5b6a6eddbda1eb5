import FieldcapCore
import TestSupport
import Testing

@testable import FieldcapBench

private typealias Simulation = TimestampSimulation

/// The simulated runs the suite judges: both sources, several seeds, each simulated once.
private enum SimulatedRuns {
    static let seeds: [UInt64] = [1, 2, 3]
    static let all: [(configuration: Simulation.Configuration, seed: UInt64, outcome: Simulation.Outcome)] =
        [Simulation.Configuration.camera(), .imu()].flatMap { configuration in
            seeds.map { seed in (configuration, seed, Simulation.simulate(configuration, seed: seed)) }
        }
    /// The clock scenarios with steps of the rate, one seed each.
    static let stepped: [(configuration: Simulation.Configuration, outcome: Simulation.Outcome)] =
        [Simulation.Configuration.camera(durationSeconds: 30), .imu(durationSeconds: 30)].flatMap { source in
            Simulation.ClockScenario.allCases.filter { $0 != .steady }.map { scenario in
                (source.with(scenario), Simulation.simulate(source.with(scenario), seed: 7))
            }
        }
}

@Suite("TimestampSimulation")
struct TimestampSimulationTests {
    @Test(
        """
        fieldcap's mapped kernel times stay within 1 µs of the \
        truth at p99, do not drift, and never leave their bound
        """
    )
    func fieldcapAccuracy() {
        for (configuration, seed, outcome) in SimulatedRuns.all {
            let fieldcap = outcome.result(.fieldcap)
            let label = "\(configuration.name), seed \(seed)"
            #expect(fieldcap.p99ErrorNs <= 1_000, "\(label): p99 \(fieldcap.p99ErrorNs) ns")
            #expect(abs(fieldcap.driftNs) <= 200, "\(label): drift \(fieldcap.driftNs) ns")
            // A pair at every dequeue: no sample is off by more than its pair's half bracket (a
            // few µs at worst, a preempted read) plus the rate's error over a few ms.
            #expect(fieldcap.maxErrorNs <= 5_000, "\(label): worst \(fieldcap.maxErrorNs) ns")
            #expect(fieldcap.overBound == 0, "\(label): \(fieldcap.overBound ?? -1) samples outside their bound")
        }
    }

    @Test(
        """
        through frequency steps and offset slews, fieldcap stays within \
        the aims (5 µs at 500 ppm, 100 µs beyond) and inside its bounds
        """
    )
    func fieldcapThroughSteps() {
        for (configuration, outcome) in SimulatedRuns.stepped {
            let fieldcap = outcome.result(.fieldcap)
            let label = "\(configuration.name), \(configuration.scenario.rawValue)"
            let aim: Int64 = configuration.scenario == .frequencyStep500 ? 5_000 : 100_000
            #expect(fieldcap.maxErrorNs <= aim, "\(label): worst \(fieldcap.maxErrorNs) ns")
            #expect(fieldcap.overBound == 0, "\(label): \(fieldcap.overBound ?? -1) samples outside their bound")
        }
    }

    @Test(
        """
        periodic clock pairs (fieldcap before) keep extrapolating an old \
        rate through a step: errors of hundreds of µs under a bound of a few
        """
    )
    func periodicPairsFailThroughSteps() {
        for (configuration, outcome) in SimulatedRuns.stepped where configuration.readIntervalNs == nil {
            let periodic = outcome.result(.periodicPairs)
            let label = "\(configuration.name), \(configuration.scenario.rawValue)"
            #expect(periodic.maxErrorNs >= 100_000, "\(label): worst \(periodic.maxErrorNs) ns")
            #expect(
                (periodic.overBound ?? 0) >= 10, "\(label): \(periodic.overBound ?? -1) samples outside their bound")
            #expect(periodic.maxErrorNs >= 20 * outcome.result(.fieldcap).maxErrorNs, "\(label)")
        }
    }

    @Test(
        """
        before their second pair, periodic pairs' error is bounded \
        by the kernel's slew limit over the sampling interval
        """
    )
    func periodicWarmUp() {
        for (configuration, seed, outcome) in SimulatedRuns.all {
            let warmUp = outcome.signedErrors[.periodicPairs]!.prefix(outcome.warmUpSamples)
            #expect(!warmUp.isEmpty)
            // One pair gives an offset and no rate: the clock may slew 500 ppm until the next,
            // which comes one interval (plus up to 2 ms of scheduling) after the first.
            let interval = Double(min(configuration.clockSampleIntervalNs, 100_000_000) + 2_000_000)
            let bound = Int64(configuration.maximumSlewPPM * interval / 1e6)
            let worst = warmUp.map { abs($0) }.max()!
            #expect(worst <= bound + 2_000, "\(configuration.name), seed \(seed): \(worst) ns > \(bound) ns")
        }
    }

    @Test("fieldcap beats every peer without its own clock pairs by a clear factor at the median and at p99")
    func fieldcapBeatsPeers() {
        for (configuration, seed, outcome) in SimulatedRuns.all {
            let fieldcap = outcome.result(.fieldcap)
            for peer in Simulation.Strategy.allCases where peer != .fieldcap && peer != .periodicPairs {
                let result = outcome.result(peer)
                // ffmpeg's mono2abs loop also removes the latency with the kernel time; it loses
                // only by its unbracketed reads and its settling at start: a smaller factor.
                let (median, p99) = peer == .clockReadLoop ? (2.0, 1.5) : (20.0, 20.0)
                let label = "\(configuration.name), seed \(seed), \(peer.rawValue)"
                #expect(
                    Double(result.medianErrorNs) >= median * Double(fieldcap.medianErrorNs),
                    "\(label): median \(result.medianErrorNs) ns against \(fieldcap.medianErrorNs) ns")
                #expect(
                    Double(result.p99ErrorNs) >= p99 * Double(fieldcap.p99ErrorNs),
                    "\(label): p99 \(result.p99ErrorNs) ns against \(fieldcap.p99ErrorNs) ns")
            }
        }
    }

    @Test(
        """
        each peer fails the way its design predicts: an offset \
        drifts with the slew, arrival-based stamps carry the latency
        """
    )
    func peersFailAsPredicted() {
        for (configuration, seed, outcome) in SimulatedRuns.all {
            let label = "\(configuration.name), seed \(seed)"
            // A one-time offset drifts by exactly what MONOTONIC − RAW moved: ppm × duration.
            let offset = outcome.result(.oneTimeOffset)
            #expect(
                abs(offset.driftNs - outcome.clockDriftNs) <= 5_000,
                "\(label): \(offset.driftNs) ns against \(outcome.clockDriftNs) ns")
            #expect(abs(outcome.clockDriftNs) > 100_000, "\(label): the clock hardly slewed")
            // The dequeue time's error is the delivery delay itself.
            let delays = outcome.delays.sorted()
            #expect(outcome.result(.dequeue).medianErrorNs == Simulation.percentile(delays, 0.5), "\(label)")
            // A DLL on arrival times settles on the mean latency (stalls included) instead of the truth.
            let meanDelay = outcome.delays.reduce(0, +) / Int64(outcome.delays.count)
            let loopMedian = Simulation.percentile(outcome.signedErrors[.arrivalLoop]!.sorted(), 0.5)
            #expect(
                abs(loopMedian - meanDelay) <= meanDelay / 4,
                "\(label): DLL \(loopMedian) ns, mean delay \(meanDelay) ns")
        }
    }

    /// What the one-way estimator can promise. Proven: a stamp is never later than the sample's
    /// arrival, so never worse than the dequeue time; and while the rate holds over the window,
    /// the line lies under every point, so between the hull points it uses it is late by at least
    /// the smallest delay. Measured here: it does not drift, and from p1 to p99 its error stays
    /// within the smallest delay −¼ / +½ of the median delay above it, and it drifts less than
    /// 20 µs. The floor itself, which
    /// no one-way method can see, remains.
    @Test("the one-way estimator is never worse than the dequeue time, stays near the delay floor, and does not drift")
    func oneWayBound() {
        for (configuration, seed, outcome) in SimulatedRuns.all {
            let label = "\(configuration.name), seed \(seed)"
            let errors = outcome.signedErrors[.oneWay]!
            for (error, delay) in zip(errors, outcome.delays) where error > delay {
                Issue.record("\(label): one-way error \(error) ns above the sample's own delay \(delay) ns")
            }
            let floor = outcome.delays.min()!
            let body = Simulation.percentile(outcome.delays.sorted(), 0.5) - floor
            let sorted = errors.sorted()
            let p1 = Simulation.percentile(sorted, 0.01)
            let p99 = outcome.result(.oneWay).p99ErrorNs
            #expect(p1 >= floor - body / 4, "\(label): p1 \(p1) ns, floor \(floor) ns, body \(body) ns")
            #expect(p99 <= floor + body / 2, "\(label): p99 \(p99) ns, floor \(floor) ns, body \(body) ns")
            let drift = outcome.result(.oneWay).driftNs
            // Measured, not proven: within 20 µs over the run, where a one-time offset drifts by ms.
            #expect(abs(drift) <= 20_000, "\(label): drift \(drift) ns")
        }
    }

    @Test("the same seed replays the same run; another seed gives another")
    func deterministic() {
        let configuration = Simulation.Configuration.camera(durationSeconds: 20)
        #expect(Simulation.run(configuration, seed: 9) == Simulation.run(configuration, seed: 9))
        #expect(Simulation.run(configuration, seed: 9) != Simulation.run(configuration, seed: 10))
    }

    @Test("the report has a row per strategy with its error as a multiple of fieldcap's")
    func report() {
        let configuration = Simulation.Configuration.imu(durationSeconds: 30)
        let results = Simulation.run(configuration, seed: 4)
        let report = Simulation.report(configuration, seed: 4, results: results)
        let rows = report.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| strategy") }
        #expect(rows.count == Simulation.Strategy.allCases.count)
        #expect(rows[0].hasPrefix("| \(Simulation.Strategy.fieldcap.rawValue) |"))
        #expect(rows[0].hasSuffix("| 1.00× | 1.00× | 1.00× |"))
        let fieldcap = results.first { $0.strategy == .fieldcap }!
        let dequeue = results.first { $0.strategy == .dequeue }!
        let ratio = Int((Double(dequeue.p99ErrorNs) / Double(fieldcap.p99ErrorNs)).rounded())
        let dequeueRow = rows.first { $0.hasPrefix("| \(Simulation.Strategy.dequeue.rawValue) |") }
        #expect(dequeueRow?.contains("| \(ratio)× |") == true, "\(dequeueRow ?? "no row")")
        // Strategies that write no bound say so; those that do give the count outside it.
        let offsetRow = rows.first { $0.hasPrefix("| \(Simulation.Strategy.oneTimeOffset.rawValue) |") }
        #expect(offsetRow?.contains("| – | – |") == true)
        #expect(rows[0].contains("| \(fieldcap.overBound!) | "))
    }
}

@Suite("TimestampSimulation: one-way estimator")
struct OneWayClockEstimatorTests {
    /// A device clock against RAW with an exact integer rate: RAW advances by `d + d / divisor`
    /// for `d` of device time (`divisor` 8_000: RAW runs 125 ppm faster; 0: same rate). Device
    /// times are multiples of the divisor, so the truth has no rounding.
    struct ExactClock {
        var divisor: Int64
        var rawBase: Int64 = 1_005_000_000_000
        func raw(_ device: Int64) -> Int64 {
            let d = device - 1_000_000_000_000
            return rawBase + d + (divisor == 0 ? 0 : d / divisor)
        }
        var ppm: Double { divisor == 0 ? 0 : 1e6 / Double(divisor) }
    }

    @Test("nothing is mapped before the first observation; after one, the device is taken to run at RAW's rate")
    func firstObservation() {
        var estimator = OneWayClockEstimator()
        #expect(estimator.toRaw(0) == nil)
        estimator.add(deviceNs: 1_000, arrivalRawNs: 51_000)
        #expect(estimator.toRaw(2_000) == 52_000)
    }

    @Test(
        "with no delay the line is the truth, within and beyond the window", arguments: [-2_000, 0, 8_000] as [Int64])
    func exactLine(divisor: Int64) {
        let clock = ExactClock(divisor: divisor)
        var estimator = OneWayClockEstimator()
        var device: Int64 = 1_000_000_000_000
        for _ in 0..<300 {
            estimator.add(deviceNs: device, arrivalRawNs: clock.raw(device))
            device += 32_000_000
        }
        #expect(abs(estimator.rateErrorPPM - clock.ppm) < 0.001)
        for ahead in stride(from: Int64(-5_000_000_000), through: 2_000_000_000, by: 500_000_000) {
            let error = estimator.toRaw(device + ahead)! - clock.raw(device + ahead)
            #expect(abs(error) <= 1, "\(clock.ppm) ppm, \(ahead) ns from the last sample: \(error) ns")
        }
    }

    @Test("any delays, as long as a few samples come through without: those set the line exactly")
    func minimumDelayWins() {
        var generator = SplitMix64(seed: 42)
        let clock = ExactClock(divisor: 4_000)
        var estimator = OneWayClockEstimator()
        var device: Int64 = 1_000_000_000_000
        for index in 0..<2_000 {
            // Every 25th sample is delivered at once; the rest 0.05–5 ms late.
            let delay: Int64 = index % 25 == 0 ? 0 : 50_000 + Int64(generator.next() % 4_950_000)
            estimator.add(deviceNs: device, arrivalRawNs: clock.raw(device) + delay)
            device += 10_000_000
        }
        #expect(abs(estimator.toRaw(device)! - clock.raw(device)) <= 1)
    }

    @Test("a constant delay is invisible to one-way observation: the estimate is late by exactly that floor")
    func constantDelay() {
        let clock = ExactClock(divisor: -16_000)
        var estimator = OneWayClockEstimator()
        var device: Int64 = 1_000_000_000_000
        for _ in 0..<500 {
            estimator.add(deviceNs: device, arrivalRawNs: clock.raw(device) + 80_000)
            device += 32_000_000
        }
        #expect(abs(estimator.toRaw(device)! - clock.raw(device) - 80_000) <= 1)
    }

    @Test("points older than the window stop counting: after a rate change the line follows within one window")
    func windowSlides() {
        var estimator = OneWayClockEstimator(windowNs: 4_000_000_000)
        var device: Int64 = 1_000_000_000_000
        var raw: Int64 = 1_005_000_000_000
        for step in 0..<1_000 {
            // RAW 100 ppm faster for 10 s, then 100 ppm slower: a kink old points would bend the line to.
            estimator.add(deviceNs: device, arrivalRawNs: raw)
            device += 20_000_000
            raw += 20_000_000 + (step < 500 ? 2_000 : -2_000)
        }
        #expect(abs(estimator.rateErrorPPM + 100) < 0.001)
        #expect(abs(estimator.toRaw(device)! - raw) <= 1)
    }

    @Test("a stall among the first few points cannot give the line a slope steeper than the rate bound")
    func rateBound() {
        var estimator = OneWayClockEstimator(maximumRatePPM: 1_000)
        estimator.add(deviceNs: 0, arrivalRawNs: 0)
        estimator.add(deviceNs: 300_000_000, arrivalRawNs: 300_000_000 + 5_000_000)  // a 5 ms stall
        #expect(abs(estimator.rateErrorPPM) <= 1_000.000_1)
        // Still under every point: never later than an arrival.
        #expect(estimator.toRaw(0)! <= 0)
        #expect(estimator.toRaw(300_000_000)! <= 305_000_000)
    }
}

@Suite("TimestampSimulation: peers")
struct PeerTimestampStrategyTests {
    @Test("ffmpeg's loop passes exact periodic times through unchanged")
    func loopExactInput() {
        var loop = DelayLockedLoop(nominalPeriodNs: 33_333_333)
        for index in 0..<300 {
            let arrival = 1_000_000_000_000 + Int64(index) * 33_333_333
            #expect(loop.update(systemNs: arrival, periodNs: 33_333_333) == arrival)
        }
        #expect(loop.clockPeriod == 1)
    }

    @Test("the first updates average (ffmpeg's 1/count gain) before the loop's own gains take over")
    func loopFirstUpdates() {
        var loop = DelayLockedLoop(nominalPeriodNs: 1_000_000)
        #expect(loop.update(systemNs: 0, periodNs: 0) == 0)
        // Predicted 1 ms, observed 1 ms + 1 µs: the second update takes half the error.
        #expect(loop.update(systemNs: 1_001_000, periodNs: 1_000_000) == 1_000_500)
    }

    @Test("ffmpeg's loop learns a rate difference and then tracks exactly")
    func loopLearnsRate() {
        var loop = DelayLockedLoop(nominalPeriodNs: 1_000_000)
        var error: Int64 = 0
        for index in 0..<20_000 {
            // The system clock runs 200 ppm faster than the device's period says.
            let arrival = Int64((Double(index) * 1_000_000 * 1.000_2).rounded())
            error = loop.update(systemNs: arrival, periodNs: 1_000_000) - arrival
        }
        #expect(abs(loop.clockPeriod - 1.000_2) < 1e-7)
        #expect(abs(error) <= 2)
    }

    @Test("ffmpeg's loop on arrival times is late by the latency: a constant delay passes straight through")
    func loopKeepsLatency() {
        var loop = DelayLockedLoop(nominalPeriodNs: 33_333_333)
        var output: Int64 = 0
        var truth: Int64 = 0
        for index in 0..<300 {
            truth = Int64(index) * 33_333_333
            output = loop.update(systemNs: truth + 150_000, periodNs: 33_333_333)
        }
        #expect(output - truth == 150_000)
    }

    @Test("a one-time offset is the difference of the reads at start, and never changes")
    func oneTimeOffset() {
        let offset = OneTimeOffset(rawNs: 1_000_079_900_000, deviceNs: 1_000_000_000_000)
        #expect(offset.offsetNs == 79_900_000)
        #expect(offset.toRaw(2_000_000_000_000) == 2_000_079_900_000)
        #expect(DequeueStamping.captureNs(arrivalRawNs: 42) == 42)
    }
}
