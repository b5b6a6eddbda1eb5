import FieldcapCore

/// How other capture tools stamp samples, reimplemented only so that `TimestampSimulation` can
/// compare fieldcap against them on the same simulated input. Nothing in fieldcap's capture path
/// uses these.

/// ROS `usb_cam`'s conversion: at start, read the two clocks once, one after the other, and add
/// that offset to every kernel timestamp for the rest of the run (`get_epoch_time_shift_us`).
/// It ignores the slewing of the kernel's clock, so its error grows by the slew rate times the
/// time since start.
///
/// Plain data; thread-safe (immutable).
public struct OneTimeOffset: Sendable, Equatable {
    /// RAW minus the device clock, as read once at start.
    public let offsetNs: Int64

    /// - Parameters:
    ///   - rawNs: a RAW reading.
    ///   - deviceNs: the device clock read right after (or before) it.
    public init(rawNs: Int64, deviceNs: Int64) {
        offsetNs = rawNs - deviceNs
    }

    /// `deviceNs` in RAW with the offset read at start.
    public func toRaw(_ deviceNs: Int64) -> Int64 { deviceNs + offsetNs }
}

/// ffmpeg's delay-locked loop (`libavdevice/timefilter.c`, after Adriaensen, "Using a DLL to
/// filter time", 2005): a second-order loop that predicts each update's system time from the
/// previous one plus the device's period, and corrects both the phase and the rate by the
/// prediction's error.
///
/// ffmpeg's ALSA and JACK inputs feed it each buffer's arrival time (less the delay the driver
/// admits to) with the device's count as the period: the output is smooth, but it tracks the
/// *arrival* times, so it stays late by the mean latency and is pulled by long stalls. Its v4l2
/// input with `-ts mono2abs` instead feeds it the wall clock and the monotonic clock read together
/// at each dequeue, and adds the kernel timestamp's distance from that monotonic reading
/// (`ff_timefilter_eval`), which removes the latency: a clock-pair filter without brackets.
///
/// Plain data; thread-bound.
public struct DelayLockedLoop: Sendable {
    /// ffmpeg's v4l2 input: `ff_timefilter_new(1, period, 1.0E-6)` with times in µs, i.e. 1 Hz.
    public static let ffmpegV4L2BandwidthHz = 1.0

    /// The filtered system time of the latest update (ffmpeg's `cycle_time`), in ns.
    public private(set) var cycleTimeNs: Double = 0
    /// System time per unit of device time (ffmpeg's `clock_period`); starts at 1.
    public private(set) var clockPeriod: Double = 1
    /// Updates so far.
    public private(set) var count = 0
    private let phaseGain: Double
    private let rateGain: Double

    /// - Parameters:
    ///   - nominalPeriodNs: the device's nominal period between updates, in device ns.
    ///   - bandwidthHz: the loop's bandwidth.
    public init(nominalPeriodNs: Double, bandwidthHz: Double = ffmpegV4L2BandwidthHz) {
        let omega = 2 * Double.pi * bandwidthHz * nominalPeriodNs / 1e9
        phaseGain = Self.oneMinusExpNegative(2.0.squareRoot() * omega)
        rateGain = Self.oneMinusExpNegative(omega * omega) / nominalPeriodNs
    }

    /// Feeds one update (`ff_timefilter_update`) and returns the filtered system time.
    /// - Parameters:
    ///   - systemNs: the system time observed at this update.
    ///   - periodNs: device time since the previous update (ignored for the first).
    @discardableResult
    public mutating func update(systemNs: Int64, periodNs: Int64) -> Int64 {
        count += 1
        if count == 1 {
            cycleTimeNs = Double(systemNs)
        } else {
            cycleTimeNs += clockPeriod * Double(periodNs)
            let loopError = Double(systemNs) - cycleTimeNs
            // The 1/count floor makes the first updates an average, so the loop locks quickly.
            cycleTimeNs += max(phaseGain, 1 / Double(count)) * loopError
            clockPeriod += rateGain * loopError
        }
        return Int64(cycleTimeNs.rounded())
    }

    /// The system time `deviceDeltaNs` of device time after the latest update
    /// (`ff_timefilter_eval`).
    public func eval(deviceDeltaNs: Int64) -> Int64 {
        Int64((cycleTimeNs + clockPeriod * Double(deviceDeltaNs)).rounded())
    }

    /// 1 − e^(−x) by ffmpeg's third-order series (`qexpneg`), so the gains match ffmpeg's.
    private static func oneMinusExpNegative(_ x: Double) -> Double {
        1 - 1 / (1 + x * (1 + x / 2 * (1 + x / 3)))
    }
}

/// The SyncField iOS SDK's stamping: a sample's capture time is the RAW time it was dequeued.
/// Its error is the whole delivery latency, outliers included.
public enum DequeueStamping {
    /// The capture time this strategy records for a sample dequeued at `arrivalRawNs`.
    @inline(__always)
    public static func captureNs(arrivalRawNs: Int64) -> Int64 { arrivalRawNs }
}

/// Clock pairs read now and then (once a second for a camera) off the capture path, and every
/// kernel timestamp mapped with the line through the latest two: extrapolated with the rate they
/// showed. What fieldcap did before it read a pair at every dequeue (`ClockTracker`), and what a
/// periodic offset sampler does. A change of rate after the latest pair is not seen until two
/// more pairs have been read, and meanwhile its error grows with the change times the distance,
/// while its bound (`uncertaintyNs(at:)`) still claims the steady-state precision.
///
/// Plain data; thread-bound.
public struct PeriodicClockPairs: Sendable {
    private var previous: ClockPairSample?
    private var latest: ClockPairSample?
    /// Pairs with a wider bracket than this are ignored.
    public let maximumBracketNs: Int64

    public init(maximumBracketNs: Int64 = 20_000) { self.maximumBracketNs = maximumBracketNs }

    public mutating func add(_ sample: ClockPairSample) {
        guard sample.bracketNs <= maximumBracketNs else { return }
        previous = latest ?? sample
        latest = sample
    }

    /// Whether only one pair has been read (an offset, no rate yet).
    public var hasRate: Bool { previous.map { $0.otherNs != latest!.otherNs } ?? false }

    private var slope: Double {
        guard let previous, let latest, latest.otherNs > previous.otherNs else { return 0 }
        return Double(latest.offsetNs - previous.offsetNs) / Double(latest.otherNs - previous.otherNs)
    }

    public func toRaw(_ otherNs: Int64) -> Int64? {
        guard let latest else { return nil }
        return otherNs + Int64((Double(latest.offsetNs) + slope * Double(otherNs - latest.otherNs)).rounded())
    }

    /// The bound it claimed: half the latest bracket, plus the slope's error from the two
    /// brackets over the distance (500 ppm with one pair). It assumes the rate did not change.
    public func uncertaintyNs(at otherNs: Int64) -> Int64? {
        guard let latest, let previous else { return nil }
        let half = (latest.bracketNs + 1) / 2
        let span = latest.otherNs - previous.otherNs
        guard span > 0 else { return half + (abs(otherNs - latest.otherNs) + 1_999) / 2_000 }
        let slopeError = Double(previous.bracketNs + latest.bracketNs) / 2 / Double(span)
        return half + Int64((slopeError * Double(abs(otherNs - latest.otherNs))).rounded(.up))
    }
}
