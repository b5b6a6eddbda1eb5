import FieldcapCore

#if canImport(Glibc)
    import Glibc
#endif

/// A deterministic simulation with known truth that measures how far each stamping strategy puts
/// samples from when they happened, in `CLOCK_MONOTONIC_RAW`, and whether the bound it wrote
/// beside each (`uncertainty_ns`) held.
///
/// The model: a periodic sensor (some samples missing) whose kernel stamps each sample with a
/// slewed clock (CLOCK_MONOTONIC: a rate of up to ±500 ppm against RAW, changing now and then by a
/// little, as an NTP daemon trims it; and, by scenario, the steps real daemons make: a frequency
/// update of 500 ppm, chrony slewing an offset away at its maximum 83,333 ppm, the kernel PLL
/// slewing an offset with a rate that steps every second). Each sample reaches user space after a
/// delay (a lognormal body above a floor, plus rare multi-millisecond stalls; never before the
/// previous sample, as from a queue). Clock pairs are RAW, MONOTONIC, RAW brackets a few hundred
/// ns to a few µs wide with the middle read anywhere inside.
///
/// fieldcap reads a pair where its sources do (`V4L2Camera`: at every dequeue; `IIOIMU`: at every
/// read of the buffer, ten times a second) into a `ClockTracker`, holds what falls inside a rate
/// change until the next pair, and applies `V4L2Camera`'s checks (never after the dequeue, never
/// backwards). The peers (`PeerTimestampStrategies.swift`) see what they would see: periodic
/// clock pairs (fieldcap before the tracker), the one-way estimator only (kernel timestamp,
/// arrival) pairs, as from a device whose own counter cannot be read, and so on.
///
/// The kernel timestamp is taken to be exact to the ns: V4L2's `timeval` truncates it to a µs,
/// an error of the driver that no strategy here can remove (`V4L2Camera` adds it to its
/// uncertainty), so it is left out to show the strategies' own errors.
///
/// Thread-safe (no shared state).
public struct TimestampSimulation {
    /// The stamping strategies compared.
    public enum Strategy: String, CaseIterable, Sendable {
        /// `ClockTracker` fed a bracketed clock pair at every dequeue (or read), applied to the
        /// kernel timestamp.
        case fieldcap = "fieldcap: clock pair per dequeue + kernel timestamp"
        /// `PeriodicClockPairs`: pairs once a second (a camera) or per read (an IMU), extrapolated.
        case periodicPairs = "periodic clock pairs (fieldcap before the tracker)"
        /// `OneWayClockEstimator` on (kernel timestamp, arrival) only: a device clock nobody can read.
        case oneWay = "one-way hull estimator (unreadable clock)"
        /// `OneTimeOffset` read at start (ROS usb_cam).
        case oneTimeOffset = "one-time offset (ROS usb_cam)"
        /// `DelayLockedLoop` on arrival times, kernel-time periods (ffmpeg's ALSA/JACK use).
        case arrivalLoop = "DLL on arrival times (ffmpeg timefilter)"
        /// `DelayLockedLoop` on clock reads at dequeue plus the kernel time's distance (ffmpeg v4l2).
        case clockReadLoop = "DLL on clock reads (ffmpeg -ts mono2abs)"
        /// `DequeueStamping` (SyncField iOS), with the SDK's default `uncertainty_ns` of 5 ms.
        case dequeue = "dequeue time (SyncField iOS)"

        /// Whether the strategy writes a bound of its own beside each time.
        var claimsBound: Bool { self == .fieldcap || self == .periodicPairs || self == .dequeue }
    }

    /// What the other clock does beyond its slow drift.
    public enum ClockScenario: String, CaseIterable, Sendable {
        /// Only the slow trimming of an NTP daemon: up to ±1 ppm every 5–20 s.
        case steady = "steady"
        /// A frequency update of +500 ppm (ntpd's and chrony's limit for the frequency) a third
        /// of the way in (`adjtimex -f`).
        case frequencyStep500 = "+500 ppm frequency step"
        /// chrony slewing a 50 ms offset away at its maximum rate, 83,333 ppm, for 0.6 s (its
        /// `maxslewrate`; the kernel's tick adjustment, `adjtimex -t`).
        case chronySlew = "83,333 ppm offset slew (chrony)"
        /// The kernel PLL slewing a 0.5 s offset (`adjtimex -o`): the rate steps every second,
        /// by the remaining offset over 16 (31,250 ppm at first).
        case kernelPLLSlew = "kernel PLL offset slew (adjtimex -o)"
    }

    public struct Configuration: Sendable {
        /// A short label for reports.
        public var name: String
        /// The sensor's period and how long the run lasts, in RAW ns.
        public var periodNs: Int64
        public var durationNs: Int64
        /// The fraction of samples that never arrive (dropped frames, FIFO overruns).
        public var missingFraction: Double

        /// Delivery delay: `minimumDelayNs` plus a lognormal with this median and log-σ.
        public var minimumDelayNs: Int64
        public var delayMedianAboveMinimumNs: Int64
        public var delayLogSigma: Double
        /// Stalls (preemption, a busy CPU): this fraction of samples is held a further
        /// `stallNs` (uniform).
        public var stallFraction: Double
        public var stallNs: ClosedRange<Int64>
        /// Reading one queued sample: back-to-back samples after a stall arrive this far apart.
        public var readCostNs: Int64

        /// The kernel clock's rate against RAW: starts anywhere within ±`maximumSlewPPM`, then
        /// every `slewChangeIntervalNs` (uniform) changes by up to ±`maximumSlewChangePPM`.
        public var maximumSlewPPM: Double
        public var slewChangeIntervalNs: ClosedRange<Int64>
        public var maximumSlewChangePPM: Double

        /// One RAW-OTHER-RAW bracket: `bracketMinimumNs` plus a lognormal with this median and
        /// log-σ; `bracketPreemptedFraction` of them are preempted for a further 5–50 µs.
        public var bracketMinimumNs: Int64
        public var bracketMedianAboveMinimumNs: Int64
        public var bracketLogSigma: Double
        public var bracketPreemptedFraction: Double
        /// Brackets per clock-pair sample (`ClockPairReader`'s burst) and samples' spacing.
        public var burst: Int
        public var clockSampleIntervalNs: Int64

        /// The one-way estimator's window.
        public var oneWayWindowNs: Int64
        /// When fieldcap reads its clock pair: at every dequeue (nil, a camera), or at reads of
        /// the device this far apart (an IMU's buffer), mapping every sample that arrived since.
        public var readIntervalNs: Int64?
        /// Steps of the clock's rate beyond the slow drift.
        public var scenario: ClockScenario = .steady

        public init(
            name: String, periodNs: Int64, durationNs: Int64, missingFraction: Double = 0.03,
            minimumDelayNs: Int64, delayMedianAboveMinimumNs: Int64, delayLogSigma: Double = 0.7,
            stallFraction: Double = 0.003, stallNs: ClosedRange<Int64> = 1_000_000...8_000_000,
            readCostNs: Int64 = 2_000, maximumSlewPPM: Double = 500,
            slewChangeIntervalNs: ClosedRange<Int64> = 5_000_000_000...20_000_000_000,
            maximumSlewChangePPM: Double = 1, bracketMinimumNs: Int64 = 150,
            bracketMedianAboveMinimumNs: Int64 = 250, bracketLogSigma: Double = 0.9,
            bracketPreemptedFraction: Double = 0.005, burst: Int = 7,
            clockSampleIntervalNs: Int64 = 1_000_000_000, oneWayWindowNs: Int64 = 8_000_000_000,
            readIntervalNs: Int64? = nil, scenario: ClockScenario = .steady
        ) {
            self.name = name
            self.periodNs = periodNs
            self.durationNs = durationNs
            self.missingFraction = missingFraction
            self.minimumDelayNs = minimumDelayNs
            self.delayMedianAboveMinimumNs = delayMedianAboveMinimumNs
            self.delayLogSigma = delayLogSigma
            self.stallFraction = stallFraction
            self.stallNs = stallNs
            self.readCostNs = readCostNs
            self.maximumSlewPPM = maximumSlewPPM
            self.slewChangeIntervalNs = slewChangeIntervalNs
            self.maximumSlewChangePPM = maximumSlewChangePPM
            self.bracketMinimumNs = bracketMinimumNs
            self.bracketMedianAboveMinimumNs = bracketMedianAboveMinimumNs
            self.bracketLogSigma = bracketLogSigma
            self.bracketPreemptedFraction = bracketPreemptedFraction
            self.burst = burst
            self.clockSampleIntervalNs = clockSampleIntervalNs
            self.oneWayWindowNs = oneWayWindowNs
            self.readIntervalNs = readIntervalNs
            self.scenario = scenario
        }

        /// The same source with another clock scenario (named after both).
        public func with(_ scenario: ClockScenario) -> Configuration {
            var copy = self
            copy.scenario = scenario
            return copy
        }

        /// A 30 Hz V4L2 camera: delays of about 80–500 µs after the kernel's stamp. `V4L2Camera`
        /// reads a clock pair (two chained brackets) at every dequeue; periodic pairs come once a
        /// second (bursts of 7).
        public static func camera(durationSeconds: Int64 = 120) -> Configuration {
            Configuration(
                name: "camera 30 Hz", periodNs: 33_333_333, durationNs: durationSeconds * 1_000_000_000,
                minimumDelayNs: 50_000, delayMedianAboveMinimumNs: 120_000)
        }

        /// A 1 kHz IIO IMU with a clock mapped into RAW (`clock=keep`): delays of about 50–300 µs
        /// after the kernel's stamp. `IIOIMU` reads a burst of 3 clock pairs with each read of the
        /// buffer, every 100 ms, and maps the samples the read brought.
        public static func imu(durationSeconds: Int64 = 60) -> Configuration {
            Configuration(
                name: "IMU 1 kHz", periodNs: 1_000_000, durationNs: durationSeconds * 1_000_000_000,
                minimumDelayNs: 30_000, delayMedianAboveMinimumNs: 70_000, stallFraction: 0.001,
                stallNs: 1_000_000...5_000_000, burst: 3, clockSampleIntervalNs: 100_000_000,
                readIntervalNs: 100_000_000)
        }
    }

    /// One strategy's errors (stamped − true time) over a run.
    public struct StrategyResult: Sendable, Equatable {
        public var strategy: Strategy
        public var name: String { strategy.rawValue }
        /// Median, 99th percentile and maximum of the absolute error.
        public var medianErrorNs: Int64
        public var p99ErrorNs: Int64
        public var maxErrorNs: Int64
        /// Drift: the median signed error of the last 10 % of samples minus that of the first 10 %.
        public var driftNs: Int64
        /// Samples whose error exceeded the bound the strategy wrote beside them (nil: it writes none).
        public var overBound: Int?
        /// The widest bound it wrote (nil: it writes none).
        public var maxBoundNs: Int64?
    }

    /// What a run measured, with the ground truth the tests check it against.
    struct Outcome: Sendable {
        var results: [StrategyResult]
        /// Each strategy's signed errors (stamped − true time), in the order the samples came.
        var signedErrors: [Strategy: [Int64]]
        /// The bounds the strategies that write one wrote, in the same order.
        var bounds: [Strategy: [Int64]]
        /// The delivery delay of each sample (the dequeue time's error).
        var delays: [Int64]
        /// Samples the periodic pairs stamped while they had a single pair (an offset, no rate).
        var warmUpSamples: Int
        /// How much MONOTONIC − RAW changed between the first and last 10 % of samples (medians):
        /// what a one-time offset must drift by.
        var clockDriftNs: Int64

        func result(_ strategy: Strategy) -> StrategyResult { results.first { $0.strategy == strategy }! }
    }

    /// Runs one simulation. The same configuration and seed give the same results.
    public static func run(_ configuration: Configuration, seed: UInt64) -> [StrategyResult] {
        simulate(configuration, seed: seed).results
    }

    static func simulate(_ configuration: Configuration, seed: UInt64) -> Outcome {
        var random = SimulationRandom(seed: seed)
        let startRaw: Int64 = 1_000_000_000_000
        let clock = SlewedClock(configuration, startRaw: startRaw, random: &random)

        // Before the stream starts: usb_cam's single pair of reads, and the first clock pairs.
        let beforeStart = startRaw - 2_000_000
        let gap = Int64(random.unit() * Double(bracketWidth(configuration, &random)))
        let oneTimeOffset = OneTimeOffset(rawNs: beforeStart, deviceNs: clock.monotonic(atRaw: beforeStart + gap))
        var periodic = PeriodicClockPairs()
        // Clock pairs draw from their own stream, so the sampler's schedule does not change the
        // delays and slews every strategy sees.
        var pairRandom = SimulationRandom(seed: seed ^ 0x5DEE_CE66_D1CE_4E5B)
        periodic.add(clockPair(configuration, atRaw: beforeStart, clock: clock, random: &pairRandom))
        // The periodic sampler takes its second pair 100 ms after the first, then keeps its interval.
        var nextClockSampleRaw = beforeStart + min(configuration.clockSampleIntervalNs, 100_000_000)

        var oneWay = OneWayClockEstimator(windowNs: configuration.oneWayWindowNs)
        var arrivalLoop = DelayLockedLoop(nominalPeriodNs: Double(configuration.periodNs))
        var clockReadLoop = DelayLockedLoop(nominalPeriodNs: Double(configuration.periodNs))

        let expected = Int(configuration.durationNs / configuration.periodNs)
        var errors = [[Int64]](repeating: [], count: Strategy.allCases.count)
        var bounds = [[Int64]](repeating: [], count: Strategy.allCases.count)
        for index in errors.indices { errors[index].reserveCapacity(expected) }
        var delays: [Int64] = []
        var truthOffsets: [Int64] = []
        var samples: [(truth: Int64, kernel: Int64, arrival: Int64)] = []
        var lastArrival = Int64.min
        var lastKernel: Int64?
        var lastMonotonicRead: Int64 = 0
        var warmUpSamples = 0
        let index = { (strategy: Strategy) in Strategy.allCases.firstIndex(of: strategy)! }

        for sample in 0..<expected {
            if random.unit() < configuration.missingFraction { continue }
            let truth = startRaw + Int64(sample) * configuration.periodNs
            let kernel = clock.monotonic(atRaw: truth)
            let arrival = max(truth + delay(configuration, &random), lastArrival + configuration.readCostNs)
            lastArrival = arrival
            samples.append((truth, kernel, arrival))
            // The periodic sampler has added every clock pair it read before this dequeue.
            while nextClockSampleRaw <= arrival {
                periodic.add(clockPair(configuration, atRaw: nextClockSampleRaw, clock: clock, random: &pairRandom))
                // The sampler sleeps between samples, plus scheduling slack.
                nextClockSampleRaw += configuration.clockSampleIntervalNs + Int64(pairRandom.unit() * 2_000_000)
            }
            if !periodic.hasRate { warmUpSamples += 1 }
            oneWay.add(deviceNs: kernel, arrivalRawNs: arrival)
            let oneWayStamp = min(oneWay.toRaw(kernel)!, arrival)

            let arrivalLoopStamp = arrivalLoop.update(systemNs: arrival, periodNs: kernel - (lastKernel ?? kernel))
            lastKernel = kernel

            // ffmpeg's convert_timestamp: read the clocks at dequeue, one after the other.
            let readGap = Int64(random.unit() * Double(bracketWidth(configuration, &random)))
            let monotonicNow = clock.monotonic(atRaw: arrival + readGap)
            clockReadLoop.update(systemNs: arrival, periodNs: monotonicNow - lastMonotonicRead)
            lastMonotonicRead = monotonicNow
            let clockReadLoopStamp = clockReadLoop.eval(deviceDeltaNs: kernel - monotonicNow)

            let stamps: [(Strategy, Int64, Int64?)] = [
                (.periodicPairs, periodic.toRaw(kernel)!, periodic.uncertaintyNs(at: kernel)),
                (.oneWay, oneWayStamp, nil), (.oneTimeOffset, oneTimeOffset.toRaw(kernel), nil),
                (.arrivalLoop, arrivalLoopStamp, nil), (.clockReadLoop, clockReadLoopStamp, nil),
                (.dequeue, DequeueStamping.captureNs(arrivalRawNs: arrival), 5_000_000),
            ]
            for (strategy, stamp, bound) in stamps {
                errors[index(strategy)].append(stamp - truth)
                if let bound { bounds[index(strategy)].append(bound) }
            }
            delays.append(arrival - truth)
            truthOffsets.append(kernel - truth)
        }
        let fieldcap = fieldcapStamps(
            samples, configuration, clock: clock, random: &pairRandom, beforeStart: beforeStart)
        errors[index(.fieldcap)] = fieldcap.errors
        bounds[index(.fieldcap)] = fieldcap.bounds

        var signedErrors: [Strategy: [Int64]] = [:]
        var claimedBounds: [Strategy: [Int64]] = [:]
        let results = Strategy.allCases.enumerated().map { index, strategy in
            let signed = errors[index]
            signedErrors[strategy] = signed
            let absolute = signed.map { abs($0) }.sorted()
            var result = StrategyResult(
                strategy: strategy, medianErrorNs: percentile(absolute, 0.5), p99ErrorNs: percentile(absolute, 0.99),
                maxErrorNs: absolute.last ?? 0, driftNs: drift(signed))
            if strategy.claimsBound {
                claimedBounds[strategy] = bounds[index]
                result.overBound = zip(signed, bounds[index]).filter { abs($0) > $1 }.count
                result.maxBoundNs = bounds[index].max() ?? 0
            }
            return result
        }
        return Outcome(
            results: results, signedErrors: signedErrors, bounds: claimedBounds, delays: delays,
            warmUpSamples: warmUpSamples, clockDriftNs: drift(truthOffsets))
    }

    /// fieldcap's stamps, as its sources make them: a clock pair at each dequeue (a camera) or
    /// each read (an IMU, which maps every sample that arrived since), a `ClockTracker`, samples
    /// in a rate change's interval held for the next pair, `V4L2Camera`'s plausibility checks.
    private static func fieldcapStamps(
        _ samples: [(truth: Int64, kernel: Int64, arrival: Int64)], _ configuration: Configuration,
        clock: SlewedClock, random: inout SimulationRandom, beforeStart: Int64
    ) -> (errors: [Int64], bounds: [Int64]) {
        var tracker = ClockTracker()
        tracker.add(clockPair(configuration, atRaw: beforeStart, clock: clock, random: &random, burst: 2))
        var errors = [Int64](repeating: 0, count: samples.count)
        var bounds = [Int64](repeating: 0, count: samples.count)
        var lastStamp: Int64 = 0
        var waiting: [Int] = []
        func stamp(_ index: Int, _ mapped: ClockTracker.Mapped, dequeue: Int64) {
            var value = mapped.rawNs
            var bound = mapped.uncertaintyNs
            if value > dequeue || value < lastStamp {
                // Implausible: the dequeue time, with one period as its bound (V4L2Camera).
                value = max(dequeue, lastStamp)
                bound = configuration.periodNs
            }
            lastStamp = value
            errors[index] = value - samples[index].truth
            bounds[index] = bound
        }
        func process(_ index: Int, dequeue: Int64) {
            if waiting.isEmpty, case .mapped(let mapped)? = tracker.map(samples[index].kernel) {
                stamp(index, mapped, dequeue: dequeue)
            } else {
                waiting.append(index)
            }
        }
        func drainWaiting(dequeue: Int64, force: Bool) {
            while let first = waiting.first {
                if case .mapped(let mapped)? = tracker.map(samples[first].kernel) {
                    stamp(first, mapped, dequeue: dequeue)
                } else if force {
                    stamp(first, tracker.mapNow(samples[first].kernel)!, dequeue: dequeue)
                } else {
                    break
                }
                waiting.removeFirst()
            }
        }
        if let interval = configuration.readIntervalNs {
            var next = 0
            var read = samples.first.map { $0.arrival } ?? 0
            while next < samples.count {
                read += interval + Int64(random.unit() * 2_000_000)
                tracker.add(clockPair(configuration, atRaw: read, clock: clock, random: &random))
                drainWaiting(dequeue: read, force: false)
                while next < samples.count && samples[next].arrival <= read {
                    process(next, dequeue: read)
                    next += 1
                }
            }
            drainWaiting(dequeue: read, force: true)
        } else {
            for index in samples.indices {
                let dequeue = samples[index].arrival
                tracker.add(clockPair(configuration, atRaw: dequeue, clock: clock, random: &random, burst: 2))
                // A camera holds one frame at most: a second sends the first on.
                drainWaiting(
                    dequeue: dequeue, force: waiting.count > 0 && !isMapped(tracker, samples[waiting[0]].kernel))
                process(index, dequeue: dequeue)
            }
            drainWaiting(dequeue: samples.last?.arrival ?? 0, force: true)
        }
        return (errors, bounds)
    }

    private static func isMapped(_ tracker: ClockTracker, _ kernel: Int64) -> Bool {
        var copy = tracker
        if case .mapped? = copy.map(kernel) { return true }
        return false
    }

    /// A markdown table of the results, with each strategy's error as a multiple of fieldcap's
    /// (peer error ÷ fieldcap error), and for those that write a bound beside each time, how many
    /// samples it failed to cover.
    public static func report(_ configuration: Configuration, seed: UInt64, results: [StrategyResult]) -> String {
        let reference = results.first { $0.strategy == .fieldcap }
        var lines = [
            "\(configuration.name), \(configuration.scenario.rawValue), \(configuration.durationNs / 1_000_000_000) s, "
                + "seed \(seed): |error| against the truth",
            "",
            "| strategy | median | p99 | max | drift | over its bound | widest "
                + "bound | median ÷ fieldcap | p99 ÷ fieldcap | max ÷ fieldcap |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for result in results {
            func ratio(_ peer: Int64, _ ours: Int64?) -> String {
                guard let ours else { return "–" }
                return format(Double(peer) / Double(max(ours, 1))) + "×"
            }
            lines.append(
                "| \(result.name) | \(microseconds(result.medianErrorNs)) | \(microseconds(result.p99ErrorNs)) | "
                    + "\(microseconds(result.maxErrorNs)) | \(microseconds(result.driftNs)) | "
                    + "\(result.overBound.map { "\($0)" } ?? "–") | "
                    + "\(result.maxBoundNs.map(microseconds) ?? "–") | "
                    + "\(ratio(result.medianErrorNs, reference?.medianErrorNs)) | "
                    + "\(ratio(result.p99ErrorNs, reference?.p99ErrorNs)) | "
                    + "\(ratio(result.maxErrorNs, reference?.maxErrorNs)) |"
            )
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: - The model

    /// One sample's delivery delay.
    private static func delay(_ configuration: Configuration, _ random: inout SimulationRandom) -> Int64 {
        let body = exp(configuration.delayLogSigma * random.normal())
        var delay = configuration.minimumDelayNs + Int64(Double(configuration.delayMedianAboveMinimumNs) * body)
        if random.unit() < configuration.stallFraction { delay += random.uniform(configuration.stallNs) }
        return delay
    }

    /// One RAW-OTHER-RAW bracket's width.
    private static func bracketWidth(_ configuration: Configuration, _ random: inout SimulationRandom) -> Int64 {
        let body = exp(configuration.bracketLogSigma * random.normal())
        var width = configuration.bracketMinimumNs + Int64(Double(configuration.bracketMedianAboveMinimumNs) * body)
        if random.unit() < configuration.bracketPreemptedFraction { width += random.uniform(5_000...50_000) }
        return width
    }

    /// What `ClockPairReader.sample()` returns: the narrowest of a burst of brackets, with the
    /// MONOTONIC read anywhere inside each.
    private static func clockPair(
        _ configuration: Configuration, atRaw raw: Int64, clock: SlewedClock, random: inout SimulationRandom,
        burst: Int? = nil
    ) -> ClockPairSample {
        var best = ClockPairSample(otherNs: 0, rawNs: 0, bracketNs: .max)
        var before = raw
        for _ in 0..<max(1, burst ?? configuration.burst) {
            let width = bracketWidth(configuration, &random)
            let other = clock.monotonic(atRaw: before + Int64(random.unit() * Double(width)))
            if width < best.bracketNs {
                best = ClockPairSample(otherNs: other, rawNs: before + width / 2, bracketNs: width)
            }
            before += width
        }
        return best
    }

    /// The value at fraction `q` of sorted values (nearest rank).
    static func percentile(_ sorted: [Int64], _ q: Double) -> Int64 {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((Double(sorted.count) * q).rounded(.up))
        return sorted[min(sorted.count, max(rank, 1)) - 1]
    }

    /// Median of the last 10 % minus median of the first 10 %: robust to the stalls, and zero for
    /// an error that only jitters.
    static func drift(_ signed: [Int64]) -> Int64 {
        let tenth = max(1, signed.count / 10)
        guard signed.count >= 2 else { return 0 }
        return percentile(signed.suffix(tenth).sorted(), 0.5) - percentile(signed.prefix(tenth).sorted(), 0.5)
    }

    private static func microseconds(_ ns: Int64) -> String { format(Double(ns) / 1000) + " µs" }

    /// Three significant digits, at least, without Foundation.
    private static func format(_ value: Double) -> String {
        let decimals = value.magnitude >= 100 ? 0 : value.magnitude >= 10 ? 1 : value.magnitude >= 1 ? 2 : 3
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = Int64((value.magnitude * scale).rounded())
        let whole = scaled / Int64(scale)
        var text = "\(value < 0 && scaled != 0 ? "-" : "")\(whole)"
        if decimals > 0 {
            let fraction = String(scaled % Int64(scale))
            text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return text
    }
}

/// CLOCK_MONOTONIC against RAW: piecewise-constant rates, continuous in time.
private struct SlewedClock {
    /// Each piece: where it starts in RAW, the clock's reading there, its rate error in ppm.
    private var pieces: [(raw: Int64, monotonic: Int64, ppm: Double)] = []

    init(_ configuration: TimestampSimulation.Configuration, startRaw: Int64, random: inout SimulationRandom) {
        let limit = configuration.maximumSlewPPM
        var ppm = (random.unit() * 2 - 1) * limit
        // The slow drift: the daemon's trims, each a rate from then on.
        var trims: [(raw: Int64, ppm: Double)] = []
        var at = startRaw - 10_000_000_000
        let end = startRaw + configuration.durationNs + 10_000_000_000
        while at < end {
            trims.append((at, ppm))
            at += random.uniform(configuration.slewChangeIntervalNs)
            ppm = min(limit, max(-limit, ppm + (random.unit() * 2 - 1) * configuration.maximumSlewChangePPM))
        }
        // The scenario's steps, as extra rate on top of the trims over a span of RAW time.
        let third = startRaw + configuration.durationNs / 3
        var extras: [(from: Int64, to: Int64, ppm: Double)] = []
        switch configuration.scenario {
        case .steady: break
        case .frequencyStep500: extras.append((third, end, 500))
        case .chronySlew: extras.append((third, third + 600_000_000, 83_333))
        case .kernelPLLSlew:
            var remaining = 0.5
            for second in 0..<Int((end - third) / 1_000_000_000) {
                let rate = remaining / 16
                let from = third + Int64(second) * 1_000_000_000
                extras.append((from, from + 1_000_000_000, rate * 1e6))
                remaining -= rate
            }
        }
        // Every boundary, in order; the rate of each piece is the trim's plus any extra.
        var boundaries = trims.map(\.raw) + extras.flatMap { [$0.from, $0.to] }
        boundaries.sort()
        // The offset this kind of machine showed between the two clocks.
        var piece = (raw: boundaries[0], monotonic: boundaries[0] - 79_900_000, ppm: 0.0)
        for boundary in boundaries where boundary >= piece.raw {
            let monotonic = pieces.isEmpty ? piece.monotonic : Self.advance(piece, to: boundary)
            let trim = trims.last { $0.raw <= boundary }?.ppm ?? trims[0].ppm
            let extra = extras.filter { $0.from <= boundary && boundary < $0.to }.reduce(0) { $0 + $1.ppm }
            piece = (boundary, monotonic, trim + extra)
            if let last = pieces.last, last.raw == boundary { pieces.removeLast() }
            pieces.append(piece)
        }
    }

    func monotonic(atRaw raw: Int64) -> Int64 {
        // Few pieces, and a simulation: a backwards scan is plenty.
        let piece = pieces.last { $0.raw <= raw } ?? pieces[0]
        return Self.advance(piece, to: raw)
    }

    private static func advance(_ piece: (raw: Int64, monotonic: Int64, ppm: Double), to raw: Int64) -> Int64 {
        let elapsed = raw - piece.raw
        return piece.monotonic + elapsed + Int64((Double(elapsed) * piece.ppm / 1e6).rounded())
    }
}

/// SplitMix64, so the simulation needs nothing outside this module and replays from its seed.
struct SimulationRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    mutating func uniform(_ range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// Standard normal (Box–Muller).
    mutating func normal() -> Double {
        let u = 1 - unit()  // (0, 1]: the logarithm stays finite
        return (-2 * log(u)).squareRoot() * cos(2 * Double.pi * unit())
    }
}
