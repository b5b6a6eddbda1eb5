import FieldcapCore

/// Maps a device clock that cannot be read (a camera's own counter, an IMU FIFO's sample clock)
/// into `CLOCK_MONOTONIC_RAW`, from the only thing the host sees: for each sample, the device's
/// time and the RAW time the sample arrived.
///
/// Why it works: a sample arrives no earlier than it was taken, so every observation
/// `(deviceNs, arrivalRawNs)` lies on or above the true device→RAW line, by its delay. The delay
/// has a floor (interrupt and wake-up latency) that some samples come close to every so often,
/// and the device's rate against RAW is bounded (crystals and the kernel's slew stay within
/// 500 ppm) and changes slowly, so over a window of seconds the truth is a straight line under
/// all the points. Only points of the lower convex hull can touch such a line; of the lines along
/// the hull's edges, the one spanning the middle of the window is the line under all points that
/// is closest to them on average (Zhang, Liu & Xia, INFOCOM 2002; ETH's cuckoo_time_translator).
/// Convexity keeps that edge's slope between those of chords from either end of the window to
/// it, so one low point cannot tilt it far; and the rate is bounded (Olson, IROS 2010), so while the window holds few
/// points (at start) a slope beyond the bound is replaced by the bound, still under all points.
/// What no one-way method can see is the delay floor itself: the estimate is late by about that
/// floor, plus how far the window's best points sit above it.
///
/// Storage is fixed at initialisation: the window is cut into buckets of device time and each
/// keeps its lowest point (lowest against the current line, so the choice is fair across a
/// bucket). Adding an observation allocates nothing (while the value is not shared: a copy pays
/// for its storage on its first write) and refits over at most `buckets` points.
///
/// Thread-bound: one thread adds and maps (it is plain data; copy it to hand a state over).
public struct OneWayClockEstimator: Sendable {
    struct Point: Sendable {
        var bucket: Int64
        var deviceNs: Int64
        var arrivalRawNs: Int64
    }

    /// The device time the fit looks back over.
    public let windowNs: Int64
    /// The device time each kept point stands for.
    public let bucketNs: Int64
    /// The largest rate difference between the device clock and RAW the fit accepts, in ppm.
    public let maximumRatePPM: Double
    /// Observations added so far.
    public private(set) var observations = 0

    /// The best point of each bucket, in a ring indexed by bucket number modulo its size.
    private var points: [Point]
    /// The lower hull of the window's points, left to right; `hullCount` of them are valid.
    private var hull: [Point]
    private var hullCount = 0
    private var newestBucket: Int64 = .min

    /// The fitted line: raw = anchorRaw + (device − anchorDevice) · (1 + residualSlope).
    private var anchorDeviceNs: Int64 = 0
    private var anchorRawNs: Int64 = 0
    private var residualSlope: Double = 0

    /// - Parameters:
    ///   - windowNs: how much device time the line is fitted over. Longer averages out more delay
    ///     but bends more when the rate changes.
    ///   - buckets: how many points the window keeps (its resolution, and the work per add).
    ///   - maximumRatePPM: the bound on the device's rate against RAW: a crystal's tolerance plus
    ///     the kernel's slew limit (500 ppm) when the device clock is a slewed kernel clock.
    public init(windowNs: Int64 = 8_000_000_000, buckets: Int = 32, maximumRatePPM: Double = 1_000) {
        precondition(windowNs > 0 && buckets >= 2, "a window needs a length and at least two buckets")
        self.windowNs = windowNs
        self.maximumRatePPM = maximumRatePPM
        bucketNs = max(1, windowNs / Int64(buckets))
        let empty = Point(bucket: .min, deviceNs: 0, arrivalRawNs: 0)
        points = Array(repeating: empty, count: buckets)
        hull = Array(repeating: empty, count: buckets)
    }

    /// How much faster RAW runs than the device clock, in parts per million, as fitted.
    public var rateErrorPPM: Double { residualSlope * 1e6 }

    /// `deviceNs` in `CLOCK_MONOTONIC_RAW`, or nil before the first observation.
    ///
    /// Late by about the delay floor. A caller stamping samples should still keep the result no
    /// later than the sample's arrival (as `V4L2Camera` does with mapped kernel times).
    @inline(__always)
    public func toRaw(_ deviceNs: Int64) -> Int64? {
        guard observations > 0 else { return nil }
        let distance = deviceNs - anchorDeviceNs
        return anchorRawNs + distance + Int64((residualSlope * Double(distance)).rounded())
    }

    /// Adds one sample: its device time and the RAW time it arrived. Observations older than the
    /// window are ignored.
    public mutating func add(deviceNs: Int64, arrivalRawNs: Int64) {
        let bucket = Self.floorDivide(deviceNs, bucketNs)
        let capacity = Int64(points.count)
        if observations > 0 && bucket <= newestBucket - capacity { return }
        observations += 1
        let candidate = Point(bucket: bucket, deviceNs: deviceNs, arrivalRawNs: arrivalRawNs)
        let slot = Int(Self.floorModulo(bucket, capacity))
        let kept = points[slot]
        guard kept.bucket != bucket || residual(candidate) < residual(kept) else { return }
        points[slot] = candidate
        newestBucket = max(newestBucket, bucket)
        refit()
    }

    /// Height above the current line: the lower, the closer to the truth + floor.
    private func residual(_ point: Point) -> Double {
        Double(point.arrivalRawNs - point.deviceNs)
            - residualSlope * Double(point.deviceNs - anchorDeviceNs)
    }

    /// Rebuilds the lower hull of the window's points (Andrew's monotone chain, buckets being in
    /// device-time order) and takes the edge spanning the middle of the window.
    private mutating func refit() {
        hullCount = 0
        let capacity = Int64(points.count)
        var base: Point?
        for bucket in (newestBucket - capacity + 1)...newestBucket {
            let point = points[Int(Self.floorModulo(bucket, capacity))]
            guard point.bucket == bucket else { continue }
            let origin = base ?? point
            base = origin
            while hullCount >= 2
                && Self.cross(hull[hullCount - 2], hull[hullCount - 1], point, origin: origin) <= 0
            {
                hullCount -= 1
            }
            hull[hullCount] = point
            hullCount += 1
        }
        guard hullCount >= 2 else {
            // One point: keep the rate fitted so far (none yet: the device runs at RAW's rate).
            anchorDeviceNs = hull[0].deviceNs
            anchorRawNs = hull[0].arrivalRawNs
            return
        }
        let first = hull[0].deviceNs
        let middle = first + (hull[hullCount - 1].deviceNs - first) / 2
        var edge = 0
        while edge < hullCount - 2 && hull[edge + 1].deviceNs <= middle { edge += 1 }
        let slope = Self.slope(hull[edge], hull[edge + 1])
        let bound = maximumRatePPM / 1e6
        guard abs(slope) > bound else {
            anchorDeviceNs = hull[edge].deviceNs
            anchorRawNs = hull[edge].arrivalRawNs
            residualSlope = slope
            return
        }
        // Too steep to be a clock (a stalled sample among few): the line at the bound that is
        // still under all points touches the hull where the edges' slopes cross the bound.
        residualSlope = slope > 0 ? bound : -bound
        var support = 0
        while support < hullCount - 1 && Self.slope(hull[support], hull[support + 1]) < residualSlope { support += 1 }
        anchorDeviceNs = hull[support].deviceNs
        anchorRawNs = hull[support].arrivalRawNs
    }

    /// The slope between two points in (device time, arrival − device time): RAW's rate error.
    private static func slope(_ left: Point, _ right: Point) -> Double {
        Double((right.arrivalRawNs - right.deviceNs) - (left.arrivalRawNs - left.deviceNs))
            / Double(right.deviceNs - left.deviceNs)
    }

    /// The turn o→a→b in (device time, arrival − device time) coordinates taken from `origin`,
    /// which keeps the numbers small: positive when counter-clockwise (a stays on the lower hull).
    private static func cross(_ o: Point, _ a: Point, _ b: Point, origin: Point) -> Double {
        func x(_ p: Point) -> Double { Double(p.deviceNs - origin.deviceNs) }
        func y(_ p: Point) -> Double {
            Double((p.arrivalRawNs - p.deviceNs) - (origin.arrivalRawNs - origin.deviceNs))
        }
        return (x(a) - x(o)) * (y(b) - y(o)) - (y(a) - y(o)) * (x(b) - x(o))
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return (value % divisor != 0 && value < 0) ? quotient - 1 : quotient
    }

    private static func floorModulo(_ value: Int64, _ divisor: Int64) -> Int64 {
        let remainder = value % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
