import FieldcapCore

/// How a camera's motion is read from its frames, for the offset check.
public enum OffsetMethod: String, Sendable, CaseIterable {
    /// The turn between consecutive frames by dense image alignment, through the focal length,
    /// against the gyroscope's turn over the same interval.
    case imageAlignment = "image-alignment"
    /// The simplest peer method: the whole frame's image-difference energy against the gyroscope's
    /// turn, which needs neither alignment nor a focal length but grows with texture, not turn alone.
    case differenceEnergy = "difference-energy"
}

/// The time offset between a camera and a gyroscope, measured: `offset` is how much later a
/// camera's stamp is than the gyroscope's for the same instant (positive: the camera's stamps are
/// late). Kalibr's `timeshift_cam_imu` (t_imu = t_cam + shift) is its negative.
public struct OffsetEstimate: Sendable {
    public var method: OffsetMethod
    /// Seconds.
    public var offset: Double
    /// Pearson's correlation of the two motions at the offset (1 is a perfect match).
    public var peakCorrelation: Double
    /// How far the correlation falls one frame period either side of the peak: a sharp peak
    /// places the offset well inside a frame.
    public var sharpness: Double
    /// The highest other peak of the correlation, more than two frame periods away: near the
    /// best, the motion repeats and the offset is ambiguous.
    public var rivalCorrelation: Double
    /// 0 to 1: how far the peak stands above its rival, as a fraction of its height above the
    /// median correlation (over every offset searched).
    public var confidence: Double
    /// The excitation: the gyroscope's root mean square rate (rad/s) about its mean (its bias
    /// removed) over the frames used.
    public var gyroRMSRate: Double
    /// Image alignment: the camera's turn per radian the gyroscope turned over the same frame
    /// pairs at the offset (least squares through 0): 1 when the focal length is the camera's,
    /// under 1 when the one used is too long (as a 60° field of view assumed of a wider lens).
    /// The difference energy's is in grey levels squared per radian.
    public var turnScale: Double
    /// Frame pairs correlated, and the median frame period (seconds).
    public var pairs: Int
    /// Frame pairs the gyroscope covers but left out: across lost frames (longer than
    /// `OffsetEstimator.maximumPeriodRatio` periods) or a gap in the gyroscope.
    public var excludedPairs: Int
    public var framePeriod: Double

    public var timeshiftCamIMU: Double { -offset }
}

/// Why the offset cannot be told from a recording; `message` says what to do.
public struct SyncCheckRefusal: Error, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        case tooShort = "too-short"
        case stillRig = "still-rig"
        case noMatch = "no-match"
        case ambiguous
        case outOfRange = "out-of-range"
        /// The camera's frames cannot be read at all (a hardware encoder's H.264 or HEVC).
        case unreadable
        /// The camera's frames are too small to align.
        case tooSmall = "too-small"
    }

    public var reason: Reason
    public var message: String
    public var description: String { message }
}

/// Cross-correlates a camera's motion with a gyroscope's over candidate offsets and takes the
/// best, refined between grid steps by a parabola through the peak and its neighbours. Each
/// candidate offset compares every frame pair's motion with the gyroscope's turn over the same
/// interval shifted by it (the integral of its rate, so the gyroscope's samples need no
/// resampling and its rate need not be a multiple of the frame rate); the frame pairs compared
/// are the same for every candidate, those the gyroscope covers at every shift.
public enum OffsetEstimator {
    /// Below this root mean square rate (rad/s, about 6°/s) the rig is called still: a waved rig
    /// turns at 30°/s and more, a gyroscope's noise is under 1°/s.
    public static let minimumRMSRate = 0.1
    /// Below this peak correlation the two motions do not match well enough to trust.
    public static let minimumCorrelation = 0.5
    /// Below this confidence the best offset hardly stands out of the others.
    public static let minimumConfidence = 0.15
    static let minimumPairs = 20
    /// A frame pair longer than this many median frame periods spans lost frames.
    public static let maximumPeriodRatio = 1.5
    /// The estimate's own error, at most, as tested on rendered truths (30 and 60 fps, delays on
    /// and off the search's 1 ms grid, through `fieldcap record`): what an offset must exceed
    /// beyond the frames' own uncertainty before it says their stamps are wrong.
    public static let accuracy = 0.001

    /// - Parameters:
    ///   - maximumOffset: seconds either way to search.
    public static func estimate(
        camera: CameraMotion, gyro: GyroTrack, method: OffsetMethod, maximumOffset: Double = 0.5
    ) throws(SyncCheckRefusal) -> OffsetEstimate {
        precondition(maximumOffset > 0)
        guard let gyroStart = gyro.times.first, let gyroEnd = gyro.times.last else {
            throw SyncCheckRefusal(reason: .tooShort, message: "the gyroscope has no samples")
        }
        let covered = camera.pairs.filter {
            $0.start - maximumOffset >= gyroStart && $0.end + maximumOffset <= gyroEnd
        }
        let periods = covered.map { $0.end - $0.start }.sorted()
        let framePeriod = periods.isEmpty ? 0 : periods[periods.count / 2]
        // A pair across dropped frames or the camera's absence is not one frame period, and one
        // whose interval (at any offset searched) spans a gap in the gyroscope would be compared
        // with a straight line through the gap: both are left out.
        let pairs = covered.filter {
            $0.end - $0.start <= maximumPeriodRatio * framePeriod
                && !gyro.spansGap(from: $0.start - maximumOffset, to: $0.end + maximumOffset)
        }
        guard pairs.count >= minimumPairs else {
            let excluded = covered.count - pairs.count
            throw SyncCheckRefusal(
                reason: .tooShort,
                message: "only \(pairs.count) frame pairs overlap the gyroscope by ±\(milliseconds(maximumOffset)) ms "
                    + (excluded > 0 ? "without a lost frame or a gap in the gyroscope between them " : "")
                    + "(\(minimumPairs) needed): record a few seconds more of both, "
                    + "or search a smaller offset (--max-offset)")
        }
        let rms = gyro.rmsRate(from: pairs.first!.start, to: pairs.last!.end)
        guard rms >= minimumRMSRate else {
            throw SyncCheckRefusal(
                reason: .stillRig,
                message: "the rig hardly turned (the gyroscope's rms rate is \(format(rms, 3)) rad/s, "
                    + "\(format(minimumRMSRate, 1)) needed): record again turning the rig by hand, "
                    + "about all three axes, for a few seconds")
        }
        let signal = pairs.map { method == .imageAlignment ? $0.turn : $0.differenceEnergy }
        // A grid fine enough that the parabola only refines within a step.
        let step = min(0.001, framePeriod / 8)
        let steps = Int((maximumOffset / step).rounded(.down))
        let lags = (-steps...steps).map { Double($0) * step }
        let correlations = lags.map { lag in pearson(signal, gyro.turns(over: pairs, shiftedBy: lag)) }
        let best = correlations.indices.max { correlations[$0] < correlations[$1] }!
        guard best > 0, best < correlations.count - 1 else {
            throw SyncCheckRefusal(
                reason: .outOfRange,
                message: "the best match is at the end of the search (\(milliseconds(lags[best])) ms): "
                    + "search a larger offset (--max-offset)")
        }
        let (left, peak, right) = (correlations[best - 1], correlations[best], correlations[best + 1])
        let curvature = left - 2 * peak + right
        let refinement = curvature < 0 ? max(-0.5, min(0.5, 0.5 * (left - right) / curvature)) : 0
        let offset = lags[best] + refinement * step
        let peakCorrelation = peak - 0.25 * (left - right) * refinement
        let frameSteps = Int((framePeriod / step).rounded())
        let beside = [best - frameSteps, best + frameSteps].filter(correlations.indices.contains)
            .map { correlations[$0] }
        let sharpness = peakCorrelation - beside.reduce(0, +) / Double(max(1, beside.count))
        var rival = -1.0
        for index in 1..<(correlations.count - 1) where abs(index - best) > 2 * frameSteps {
            let value = correlations[index]
            if value >= correlations[index - 1] && value >= correlations[index + 1] { rival = max(rival, value) }
        }
        // Against the typical (median) correlation, not against 1: a motion that repeats has a rival
        // a hair below a peak that is itself near 1, which only the first scale shows.
        let typical = correlations.sorted()[correlations.count / 2]
        let confidence = max(0, min(1, (peakCorrelation - max(rival, typical)) / max(1e-9, peakCorrelation - typical)))
        let estimate = OffsetEstimate(
            method: method, offset: offset, peakCorrelation: peakCorrelation, sharpness: sharpness,
            rivalCorrelation: rival, confidence: confidence, gyroRMSRate: rms,
            turnScale: scale(signal, on: gyro.turns(over: pairs, shiftedBy: lags[best])), pairs: pairs.count,
            excludedPairs: covered.count - pairs.count, framePeriod: framePeriod)
        guard peakCorrelation >= minimumCorrelation else {
            throw SyncCheckRefusal(
                reason: .noMatch,
                message: "the camera's motion and the gyroscope's do not match (best correlation "
                    + "\(format(peakCorrelation, 2)), \(format(minimumCorrelation, 2)) needed): is the IMU on the same "
                    + "rig, and does the camera see texture? Record again turning the rig by hand")
        }
        guard confidence >= minimumConfidence else {
            throw SyncCheckRefusal(
                reason: .ambiguous,
                message: "another offset matches almost as well (correlation \(format(rival, 2)) against "
                    + "\(format(peakCorrelation, 2)) at \(milliseconds(offset)) ms): the motion repeats; "
                    + "record again turning the rig irregularly, not back and forth at one pace")
        }
        return estimate
    }

    /// The least-squares slope of `a` on `b` through the origin.
    static func scale(_ a: [Double], on b: [Double]) -> Double {
        let bb = b.reduce(0) { $0 + $1 * $1 }
        return bb > 0 ? zip(a, b).reduce(0) { $0 + $1.0 * $1.1 } / bb : 0
    }

    static func pearson(_ a: [Double], _ b: [Double]) -> Double {
        let count = Double(a.count)
        let meanA = a.reduce(0, +) / count, meanB = b.reduce(0, +) / count
        var ab = 0.0, aa = 0.0, bb = 0.0
        for index in a.indices {
            let (x, y) = (a[index] - meanA, b[index] - meanB)
            ab += x * y
            aa += x * x
            bb += y * y
        }
        guard aa > 0, bb > 0 else { return 0 }
        return ab / (aa * bb).squareRoot()
    }

    static func milliseconds(_ seconds: Double) -> String { format(seconds * 1000, 1) }

    static func format(_ value: Double, _ digits: Int) -> String { cFormat("%.\(digits)f", value) }
}
