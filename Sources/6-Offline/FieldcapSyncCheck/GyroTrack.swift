/// A gyroscope's angular velocity, integrated: the turn between any two instants it covers, and
/// where samples are missing (gaps), which no interval compared with a camera's may span: the
/// integral across a gap is a straight line, not the turning the gyroscope did not see.
///
/// Thread-safe (a value).
public struct GyroTrack: Sendable {
    /// Seconds, increasing.
    public let times: [Double]
    /// The integral of the angular velocity from the first sample (trapezoids), x, y, z.
    private let integral: [SIMD3<Double>]
    /// The angular velocity (rad/s) at each sample.
    private let rates: [SIMD3<Double>]
    /// Where samples are missing, in time order: from the last sample before to the first after.
    public let gaps: [ClosedRange<Double>]

    /// An interval between samples longer than this many times the median one is a gap: a sample
    /// or two lost are bridged well enough by the trapezoid, a longer silence is not.
    public static let gapFactor = 5.0

    /// `samples`: time (seconds) and angular velocity (rad/s, x, y, z); out-of-order ones are dropped.
    public init(samples: [(time: Double, rate: SIMD3<Double>)]) {
        var times: [Double] = [], integral: [SIMD3<Double>] = [], rates: [SIMD3<Double>] = []
        var last: (time: Double, rate: SIMD3<Double>)?
        for sample in samples where last == nil || sample.time > last!.time {
            let sum = last.map { integral.last! + 0.5 * (sample.time - $0.time) * ($0.rate + sample.rate) } ?? .zero
            times.append(sample.time)
            integral.append(sum)
            rates.append(sample.rate)
            last = sample
        }
        let intervals = zip(times.dropFirst(), times).map { $0 - $1 }
        let median = intervals.isEmpty ? 0 : intervals.sorted()[intervals.count / 2]
        gaps = intervals.indices.filter { intervals[$0] > Self.gapFactor * median }.map { times[$0]...times[$0 + 1] }
        self.times = times
        self.integral = integral
        self.rates = rates
    }

    /// The turn (radians, the magnitude of the integrated rate) from `start` to `end`; nil where
    /// the track does not cover both.
    func turn(from start: Double, to end: Double) -> Double? {
        var cursor = 0
        guard let a = integral(at: start, cursor: &cursor), let b = integral(at: end, cursor: &cursor) else {
            return nil
        }
        let d = b - a
        return (d * d).sum().squareRoot()
    }

    /// The turn over each pair's interval shifted by `lag` (`start - lag` to `end - lag`), 0 where
    /// the track does not cover it. Pairs in time order (each starting where or after the one
    /// before ends, as consecutive frames do) are found in one walk along the samples.
    func turns(over pairs: [CameraMotion.Pair], shiftedBy lag: Double) -> [Double] {
        var cursor = 0
        return pairs.map { pair in
            guard let a = integral(at: pair.start - lag, cursor: &cursor),
                let b = integral(at: pair.end - lag, cursor: &cursor)
            else { return 0 }
            let d = b - a
            return (d * d).sum().squareRoot()
        }
    }

    /// Whether a gap lies (even partly) between `start` and `end`.
    func spansGap(from start: Double, to end: Double) -> Bool {
        // The first gap that ends after `start`; it is inside when it starts before `end`.
        var low = 0, high = gaps.count
        while low < high {
            let middle = (low + high) / 2
            if gaps[middle].upperBound <= start { low = middle + 1 } else { high = middle }
        }
        return low < gaps.count && gaps[low].lowerBound < end
    }

    /// The root mean square rate (rad/s) between `start` and `end` about its mean: the turning,
    /// without the gyroscope's bias (a still gyroscope reads its bias, not zero).
    func rmsRate(from start: Double, to end: Double) -> Double {
        var sum = SIMD3<Double>.zero, squares = 0.0, count = 0
        var index = firstIndex(atOrAfter: start)
        while index < times.count && times[index] <= end {
            sum += rates[index]
            squares += (rates[index] * rates[index]).sum()
            count += 1
            index += 1
        }
        guard count > 0 else { return 0 }
        let mean = sum / Double(count)
        return max(0, squares / Double(count) - (mean * mean).sum()).squareRoot()
    }

    private func firstIndex(atOrAfter time: Double) -> Int {
        var low = 0, high = times.count
        while low < high {
            let middle = (low + high) / 2
            if times[middle] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The integral at `time`, interpolated; `cursor` is a sample at or before the last time
    /// asked, so times asked in order walk forward from it, and an earlier time searches afresh.
    private func integral(at time: Double, cursor: inout Int) -> SIMD3<Double>? {
        guard let first = times.first, time >= first, time <= times.last! else { return nil }
        if times[cursor] > time { cursor = max(0, firstIndex(atOrAfter: time) - 1) }
        while cursor + 1 < times.count && times[cursor + 1] <= time { cursor += 1 }
        guard cursor + 1 < times.count else { return integral[cursor] }
        let fraction = (time - times[cursor]) / (times[cursor + 1] - times[cursor])
        return integral[cursor] + fraction * (integral[cursor + 1] - integral[cursor])
    }
}
