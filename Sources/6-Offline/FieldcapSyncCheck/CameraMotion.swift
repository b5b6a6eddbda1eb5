/// What a camera's frames say about its motion, one entry per pair of consecutive frames: the
/// turn between them found by image alignment, and the peer method's image-difference energy.
/// Fed one frame at a time (an hour of frames is never held), each turned to a small grey image.
///
/// Thread-bound.
public struct CameraMotion: Sendable {
    /// Two consecutive frames: their stamps (seconds, on the session's clock) and what moved.
    public struct Pair: Sendable {
        public var start: Double
        public var end: Double
        /// Radians: the turn image alignment found, through the focal length.
        public var turn: Double
        /// The mean squared difference of the two images (grey levels squared).
        public var differenceEnergy: Double
    }

    /// Pixels of the working image (after averaging down): the focal lengths, x and y.
    public let focalLength: (x: Double, y: Double)
    public private(set) var pairs: [Pair] = []
    private var previous: (time: Double, pyramid: [GreyImage])?

    /// `focalLength`: in pixels of the images `add` is given (the working size).
    public init(focalLength: (x: Double, y: Double)) {
        precondition(focalLength.x > 0 && focalLength.y > 0)
        self.focalLength = focalLength
    }

    /// The next frame, stamped `time` seconds; frames come in time order.
    public mutating func add(_ image: GreyImage, at time: Double) {
        let pyramid = ImageAlignment.pyramid(image)
        if let previous, time > previous.time {
            let motion = ImageAlignment.align(previous.pyramid, pyramid)
            let turn = SIMD3(motion.shiftX / focalLength.x, motion.shiftY / focalLength.y, motion.rotation)
            pairs.append(
                Pair(
                    start: previous.time, end: time, turn: (turn * turn).sum().squareRoot(),
                    differenceEnergy: pyramid[0].meanSquaredDifference(from: previous.pyramid[0])))
        }
        if previous == nil || time > previous!.time { previous = (time, pyramid) }
    }
}

/// A gyroscope's angular velocity, integrated: the turn between any two instants it covers.
///
/// Thread-safe (a value).
public struct GyroTrack: Sendable {
    /// Seconds, increasing.
    public let times: [Double]
    /// The integral of the angular velocity from the first sample (trapezoids), x, y, z.
    private let integral: [SIMD3<Double>]
    /// The root mean square of the angular velocity's magnitude (rad/s) at each sample.
    private let squaredRates: [Double]

    /// `samples`: time (seconds) and angular velocity (rad/s, x, y, z); out-of-order ones are dropped.
    public init(samples: [(time: Double, rate: SIMD3<Double>)]) {
        var times: [Double] = [], integral: [SIMD3<Double>] = [], squares: [Double] = []
        var last: (time: Double, rate: SIMD3<Double>)?
        for sample in samples where last == nil || sample.time > last!.time {
            let sum = last.map { integral.last! + 0.5 * (sample.time - $0.time) * ($0.rate + sample.rate) } ?? .zero
            times.append(sample.time)
            integral.append(sum)
            squares.append((sample.rate * sample.rate).sum())
            last = sample
        }
        self.times = times
        self.integral = integral
        squaredRates = squares
    }

    /// The turn (radians, the magnitude of the integrated rate) from `start` to `end`; nil where
    /// the track does not cover both.
    func turn(from start: Double, to end: Double) -> Double? {
        guard let a = integral(at: start), let b = integral(at: end) else { return nil }
        let d = b - a
        return (d * d).sum().squareRoot()
    }

    /// The root mean square rate (rad/s) between `start` and `end`.
    func rmsRate(from start: Double, to end: Double) -> Double {
        var sum = 0.0, count = 0
        for index in times.indices where times[index] >= start && times[index] <= end {
            sum += squaredRates[index]
            count += 1
        }
        return count == 0 ? 0 : (sum / Double(count)).squareRoot()
    }

    private func integral(at time: Double) -> SIMD3<Double>? {
        guard let first = times.first, time >= first, time <= times.last! else { return nil }
        var low = 0, high = times.count - 1
        while high - low > 1 {
            let middle = (low + high) / 2
            if times[middle] <= time { low = middle } else { high = middle }
        }
        guard high > low else { return integral[low] }
        let fraction = (time - times[low]) / (times[high] - times[low])
        return integral[low] + fraction * (integral[high] - integral[low])
    }
}
