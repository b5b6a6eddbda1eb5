#if canImport(Glibc)
import Glibc
#endif

/// A deterministic simulation with known truth that measures how far each stamping strategy puts
/// samples from when they happened, in `CLOCK_MONOTONIC_RAW`.
///
/// The model: a periodic sensor (some samples missing) whose kernel stamps each sample with a
/// slewed clock (CLOCK_MONOTONIC: a rate of up to ±500 ppm against RAW, changing now and then, as
/// an NTP daemon updates it). Each sample reaches user space after a delay (a lognormal body above
/// a floor, plus rare multi-millisecond stalls; never before the previous sample, as from a
/// queue). A sampler reads RAW, MONOTONIC, RAW in bursts, each bracket a few hundred ns to a few
/// µs wide with the middle read anywhere inside, and feeds the narrowest of each burst to a
/// `ClockMapping` at the cadence of the real source: once before streaming and then about once a
/// second for a camera (`V4L2Camera`), with every read of the buffer, ten times a second, for an
/// IMU (`IIOIMU`). fieldcap's stamps go through `V4L2Camera`'s checks (never after the dequeue,
/// never backwards). The peers (`PeerTimestampStrategies.swift`) see what they would see: the
/// one-way estimator only (kernel timestamp, arrival) pairs, as from a device whose own counter
/// cannot be read.
///
/// The kernel timestamp is taken to be exact to the ns: V4L2's `timeval` truncates it to a µs,
/// an error of the driver that no strategy here can remove (`V4L2Camera` adds it to its
/// uncertainty), so it is left out to show the strategies' own errors.
///
/// Thread-safe (no shared state).
public struct TimestampSimulation {
    /// The stamping strategies compared.
    public enum Strategy: String, CaseIterable, Sendable {
        /// `ClockMapping` fed bracketed clock pairs, applied to the kernel timestamp.
        case fieldcap = "fieldcap: clock pairs + kernel timestamp"
        /// `OneWayClockEstimator` on (kernel timestamp, arrival) only: a device clock nobody can read.
        case oneWay = "one-way hull estimator (unreadable clock)"
        /// `OneTimeOffset` read at start (ROS usb_cam).
        case oneTimeOffset = "one-time offset (ROS usb_cam)"
        /// `DelayLockedLoop` on arrival times, kernel-time periods (ffmpeg's ALSA/JACK use).
        case arrivalLoop = "DLL on arrival times (ffmpeg timefilter)"
        /// `DelayLockedLoop` on clock reads at dequeue plus the kernel time's distance (ffmpeg v4l2).
        case clockReadLoop = "DLL on clock reads (ffmpeg -ts mono2abs)"
        /// `DequeueStamping` (SyncField iOS).
        case dequeue = "dequeue time (SyncField iOS)"
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

        public init(
            name: String, periodNs: Int64, durationNs: Int64, missingFraction: Double = 0.03,
            minimumDelayNs: Int64, delayMedianAboveMinimumNs: Int64, delayLogSigma: Double = 0.7,
            stallFraction: Double = 0.003, stallNs: ClosedRange<Int64> = 1_000_000...8_000_000,
            readCostNs: Int64 = 2_000, maximumSlewPPM: Double = 500,
            slewChangeIntervalNs: ClosedRange<Int64> = 5_000_000_000...20_000_000_000,
            maximumSlewChangePPM: Double = 1, bracketMinimumNs: Int64 = 150,
            bracketMedianAboveMinimumNs: Int64 = 250, bracketLogSigma: Double = 0.9,
            bracketPreemptedFraction: Double = 0.005, burst: Int = 7,
            clockSampleIntervalNs: Int64 = 1_000_000_000, oneWayWindowNs: Int64 = 8_000_000_000
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
        }

        /// A 30 Hz V4L2 camera: delays of about 80–500 µs after the kernel's stamp. `V4L2Camera`
        /// reads a burst of 7 clock pairs before streaming, then about once a second.
        public static func camera(durationSeconds: Int64 = 120) -> Configuration {
            Configuration(
                name: "camera 30 Hz", periodNs: 33_333_333, durationNs: durationSeconds * 1_000_000_000,
                minimumDelayNs: 50_000, delayMedianAboveMinimumNs: 120_000)
        }

        /// A 1 kHz IIO IMU: delays of about 50–300 µs after the kernel's stamp. `IIOIMU` reads a
        /// (narrower) burst of 3 clock pairs with each read of the buffer, every 100 ms.
        public static func imu(durationSeconds: Int64 = 60) -> Configuration {
            Configuration(
                name: "IMU 1 kHz", periodNs: 1_000_000, durationNs: durationSeconds * 1_000_000_000,
                minimumDelayNs: 30_000, delayMedianAboveMinimumNs: 70_000, stallFraction: 0.001,
                stallNs: 1_000_000...5_000_000, burst: 3, clockSampleIntervalNs: 100_000_000)
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
    }

    /// What a run measured, with the ground truth the tests check it against.
    struct Outcome: Sendable {
        var results: [StrategyResult]
        /// Each strategy's signed errors (stamped − true time), in the order the samples came.
        var signedErrors: [Strategy: [Int64]]
        /// The delivery delay of each sample (the dequeue time's error).
        var delays: [Int64]
        /// Samples stamped while the mapping had a single clock pair (an offset, no rate yet).
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

        // Before the stream starts: usb_cam's single pair of reads, and V4L2Camera's first burst.
        let beforeStart = startRaw - 2_000_000
        let gap = Int64(random.unit() * Double(bracketWidth(configuration, &random)))
        let oneTimeOffset = OneTimeOffset(rawNs: beforeStart, deviceNs: clock.monotonic(atRaw: beforeStart + gap))
        let mapping = ClockMapping()
        // Clock pairs draw from their own stream, so the sampler's schedule does not change the
        // delays and slews every strategy sees.
        var pairRandom = SimulationRandom(seed: seed ^ 0x5DEE_CE66_D1CE_4E5B)
        mapping.add(clockPair(configuration, atRaw: beforeStart, clock: clock, random: &pairRandom))
        // V4L2Camera's sampler takes its second pair 100 ms after the first, then keeps its interval.
        var nextClockSampleRaw = beforeStart + min(configuration.clockSampleIntervalNs, 100_000_000)

        var oneWay = OneWayClockEstimator(windowNs: configuration.oneWayWindowNs)
        var arrivalLoop = DelayLockedLoop(nominalPeriodNs: Double(configuration.periodNs))
        var clockReadLoop = DelayLockedLoop(nominalPeriodNs: Double(configuration.periodNs))

        let expected = Int(configuration.durationNs / configuration.periodNs)
        var errors = [[Int64]](repeating: [], count: Strategy.allCases.count)
        for index in errors.indices { errors[index].reserveCapacity(expected) }
        var delays: [Int64] = []
        var truthOffsets: [Int64] = []
        var lastArrival = Int64.min
        var lastKernel: Int64?
        var lastMonotonicRead: Int64 = 0
        var lastFieldcap: Int64 = 0
        var warmUpSamples = 0

        for sample in 0..<expected {
            if random.unit() < configuration.missingFraction { continue }
            let truth = startRaw + Int64(sample) * configuration.periodNs
            let kernel = clock.monotonic(atRaw: truth)
            let arrival = max(truth + delay(configuration, &random), lastArrival + configuration.readCostNs)
            lastArrival = arrival
            // The sampler thread has added every clock pair it read before this dequeue.
            while nextClockSampleRaw <= arrival {
                mapping.add(clockPair(configuration, atRaw: nextClockSampleRaw, clock: clock, random: &pairRandom))
                // The sampler sleeps between samples, plus scheduling slack.
                nextClockSampleRaw += configuration.clockSampleIntervalNs + Int64(pairRandom.unit() * 2_000_000)
            }

            // fieldcap, with V4L2Camera's checks: never after the dequeue, never backwards.
            var fieldcap = arrival
            let snapshot = mapping.snapshot
            if let mapped = snapshot?.toRaw(kernel), mapped > 0, mapped <= arrival, mapped >= lastFieldcap {
                fieldcap = mapped
            }
            if let snapshot, snapshot.latestOtherNs == snapshot.previousOtherNs { warmUpSamples += 1 }
            lastFieldcap = fieldcap
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

            let stamps: [Strategy: Int64] = [
                .fieldcap: fieldcap, .oneWay: oneWayStamp, .oneTimeOffset: oneTimeOffset.toRaw(kernel),
                .arrivalLoop: arrivalLoopStamp, .clockReadLoop: clockReadLoopStamp,
                .dequeue: DequeueStamping.captureNs(arrivalRawNs: arrival),
            ]
            for (index, strategy) in Strategy.allCases.enumerated() { errors[index].append(stamps[strategy]! - truth) }
            delays.append(arrival - truth)
            truthOffsets.append(kernel - truth)
        }

        var signedErrors: [Strategy: [Int64]] = [:]
        let results = Strategy.allCases.enumerated().map { index, strategy in
            let signed = errors[index]
            signedErrors[strategy] = signed
            let absolute = signed.map { abs($0) }.sorted()
            return StrategyResult(
                strategy: strategy, medianErrorNs: percentile(absolute, 0.5), p99ErrorNs: percentile(absolute, 0.99),
                maxErrorNs: absolute.last ?? 0, driftNs: drift(signed))
        }
        return Outcome(
            results: results, signedErrors: signedErrors, delays: delays, warmUpSamples: warmUpSamples,
            clockDriftNs: drift(truthOffsets))
    }

    /// A markdown table of the results, with each strategy's error as a multiple of fieldcap's
    /// (peer error ÷ fieldcap error).
    public static func report(_ configuration: Configuration, seed: UInt64, results: [StrategyResult]) -> String {
        let reference = results.first { $0.strategy == .fieldcap }
        var lines = [
            "\(configuration.name), \(configuration.durationNs / 1_000_000_000) s, seed \(seed): "
                + "|error| against the truth",
            "",
            "| strategy | median | p99 | max | drift | median ÷ fieldcap | p99 ÷ fieldcap |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for result in results {
            func ratio(_ peer: Int64, _ ours: Int64?) -> String {
                guard let ours else { return "–" }
                return format(Double(peer) / Double(max(ours, 1))) + "×"
            }
            lines.append(
                "| \(result.name) | \(microseconds(result.medianErrorNs)) | \(microseconds(result.p99ErrorNs)) | "
                    + "\(microseconds(result.maxErrorNs)) | \(microseconds(result.driftNs)) | "
                    + "\(ratio(result.medianErrorNs, reference?.medianErrorNs)) | "
                    + "\(ratio(result.p99ErrorNs, reference?.p99ErrorNs)) |")
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
        _ configuration: Configuration, atRaw raw: Int64, clock: SlewedClock, random: inout SimulationRandom
    ) -> ClockPairSample {
        var best = ClockPairSample(otherNs: 0, rawNs: 0, bracketNs: .max)
        var before = raw
        for _ in 0..<max(1, configuration.burst) {
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
        // The offset this kind of machine showed between the two clocks.
        var piece = (raw: startRaw - 10_000_000_000, monotonic: startRaw - 10_000_000_000 - 79_900_000, ppm: ppm)
        let end = startRaw + configuration.durationNs + 10_000_000_000
        while piece.raw < end {
            pieces.append(piece)
            let next = piece.raw + random.uniform(configuration.slewChangeIntervalNs)
            ppm = min(limit, max(-limit, ppm + (random.unit() * 2 - 1) * configuration.maximumSlewChangePPM))
            piece = (next, Self.advance(piece, to: next), ppm)
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
