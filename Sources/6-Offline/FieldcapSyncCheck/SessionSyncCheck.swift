import FieldcapCalibration
import FieldcapCore
import FieldcapExport
import FieldcapSession
import SyncField

/// The offset check of one camera against one IMU's gyroscope: both methods' answers (an estimate
/// or a refusal), and what the session's calibration says, when it says anything.
public struct SyncCheckPair: Sendable {
    public var camera: String
    public var imu: String
    /// Image alignment: the answer to trust.
    public var alignment: Result<OffsetEstimate, SyncCheckRefusal>
    /// The peer method, image-difference energy, for comparison.
    public var differenceEnergy: Result<OffsetEstimate, SyncCheckRefusal>
    /// The calibration's `timeshift_cam_imu` for the camera (seconds), when it has one.
    public var calibratedTimeshift: Double?
    /// The focal length came from the session's intrinsics (else a 60° field of view is assumed).
    public var usedIntrinsics: Bool
    /// The median `uncertainty_ns` of the camera's frames, in seconds: what its stamps claim; nil
    /// when its frames claim none.
    public var frameUncertainty: Double?
    /// The camera's frames in the window that could not be read (they do not decode, or are of
    /// another size than the stream's) and were left out.
    public var skippedFrames = 0
    /// The gyroscope's axes the IMU does not have (`x`, `y`, `z`), read as 0: the turn measured
    /// is about the others only.
    public var missingGyroAxes: [String] = []

    /// The measured offset is larger than the frames' own uncertainty, by more than the
    /// estimate's own error: their stamps are further from the instant the IMU saw than they
    /// claim (or the IMU's are).
    public var exceedsFrameUncertainty: Bool {
        guard let frameUncertainty, case .success(let estimate) = alignment else { return false }
        return abs(estimate.offset) > frameUncertainty + OffsetEstimator.accuracy
    }

    /// The measured and calibrated time shifts differ by more than a quarter of a frame period.
    public var disagreesWithCalibration: Bool {
        guard let calibratedTimeshift, case .success(let estimate) = alignment else { return false }
        return abs(estimate.timeshiftCamIMU - calibratedTimeshift) > estimate.framePeriod / 4
    }
}

/// What `fieldcap check-sync` found: the stretch of the session analysed, and each pair.
public struct SyncCheckReport: Sendable {
    /// How the stretch analysed was chosen.
    public enum WindowChoice: Sendable, Equatable {
        /// The whole recording: it is no longer than `SessionSyncCheck.windowLength`.
        case whole
        /// The stretch of `windowLength` where this IMU's gyroscope turned the most.
        case mostExcited(imu: String)
        /// The one asked for (`--from`/`--to`).
        case given
    }

    /// Seconds from the session's sync point.
    public var window: ClosedRange<Double>
    public var windowChoice: WindowChoice
    public var pairs: [SyncCheckPair]
}

/// `fieldcap check-sync`: the offset between each camera and each IMU with a gyroscope of a
/// finished session, read with the exports' readers (so the session is validated first). One
/// stretch of at most `windowLength` is analysed, so an hour's recording costs what a minute's
/// does: only its frames are aligned and only its gyroscope samples held.
public enum SessionSyncCheck {
    /// Seconds analysed unless a window is given: a minute of waving is plenty.
    public static let windowLength = 60.0

    /// Each camera against each gyroscope, cameras in the session's order. `window`: seconds
    /// from the session's sync point to analyse; nil for the most excited `windowLength` (the
    /// whole recording when shorter). `progress` hears each stream's id as it starts reading it.
    public static func check(
        directory: String, maximumOffset: Double = 0.5, window givenWindow: ClosedRange<Double>? = nil,
        progress: ((String) -> Void)? = nil
    ) throws(ExportError) -> SyncCheckReport {
        let session = try ExportSession(directory: directory, keepingUnreadableCameras: true)
        let calibration = try session.readCalibration()
        let origin = session.syncPoint.monotonicNs
        func seconds(_ captureNs: UInt64) -> Double { Double(Int64(bitPattern: captureNs &- origin)) / 1e9 }

        let imus = session.streams.filter { !$0.isCamera }.compactMap { stream in
            GyroChannels(channels: stream.channels).map { (stream: stream, gyro: $0) }
        }
        guard let first = imus.first else {
            throw ExportError(
                .session,
                "\(directory) has no IMU with a gyroscope (anglvel_* or gyro_* channels): "
                    + "record one beside the cameras to check their offset")
        }
        let cameras = session.streams.filter { $0.isCamera && !$0.recordedNothing }
        guard !cameras.isEmpty else {
            throw ExportError(.session, "\(directory) has no camera with frames: nothing to check against the IMU")
        }

        let window: ClosedRange<Double>, choice: SyncCheckReport.WindowChoice
        if let givenWindow {
            (window, choice) = (givenWindow, .given)
        } else {
            var excitation = ExcitationBins()
            try readGyro(session, first.stream, first.gyro, seconds: seconds) { excitation.add($1, at: $0) }
            if let busiest = excitation.mostExcited(length: windowLength) {
                (window, choice) = (busiest, .mostExcited(imu: first.stream.id))
            } else {
                (window, choice) = (-Double.infinity...Double.infinity, .whole)
            }
        }
        // The gyroscope is read beyond the window by the search, and a little more, so the
        // frames at the window's edges are compared at every offset.
        let margin = maximumOffset + 0.1
        var gyros: [(id: String, track: GyroTrack, missing: [String])] = []
        for (stream, channels) in imus {
            progress?(stream.id)
            var samples: [(time: Double, rate: SIMD3<Double>)] = []
            try readGyro(session, stream, channels, seconds: seconds) { time, rate in
                if time >= window.lowerBound - margin && time <= window.upperBound + margin {
                    samples.append((time, rate))
                }
            }
            if !samples.isEmpty { gyros.append((stream.id, GyroTrack(samples: samples), channels.missingAxes)) }
        }
        guard !gyros.isEmpty else {
            throw ExportError(
                .session, "\(directory)'s gyroscopes have no samples in the stretch analysed: nothing to check against")
        }
        let analysed =
            choice == .whole
            ? gyros.map { $0.track.times.first! }.min()!...gyros.map { $0.track.times.last! }.max()! : window

        var pairs: [SyncCheckPair] = []
        for stream in cameras {
            progress?(stream.id)
            let calibrated = calibration[stream.id]
            let read: Result<(CameraMotion, uncertainty: Double?), SyncCheckRefusal>
            do throws(ExportError) {
                read = try cameraMotion(session, stream, calibrated, window: window, seconds: seconds)
            } catch {
                read = .failure(
                    SyncCheckRefusal(
                        reason: .unreadable, message: "\(stream.id)'s frames cannot be read: \(error.message)"))
            }
            for gyro in gyros {
                func estimate(_ method: OffsetMethod) -> Result<OffsetEstimate, SyncCheckRefusal> {
                    read.flatMap { motion, _ in
                        Result { () throws(SyncCheckRefusal) in
                            try OffsetEstimator.estimate(
                                camera: motion, gyro: gyro.track, method: method, maximumOffset: maximumOffset)
                        }
                    }
                }
                pairs.append(
                    SyncCheckPair(
                        camera: stream.id, imu: gyro.id, alignment: estimate(.imageAlignment),
                        differenceEnergy: estimate(.differenceEnergy),
                        calibratedTimeshift: calibrated?.timeshiftCamIMU, usedIntrinsics: calibrated != nil,
                        frameUncertainty: (try? read.get())?.uncertainty,
                        skippedFrames: (try? read.get())?.0.skippedFrames ?? 0, missingGyroAxes: gyro.missing))
            }
        }
        return SyncCheckReport(window: analysed, windowChoice: choice, pairs: pairs)
    }

    /// Each gyroscope sample of `stream`: its time (seconds from the sync point) and rate.
    private static func readGyro(
        _ session: ExportSession, _ stream: ExportSession.Stream, _ channels: GyroChannels,
        seconds: (UInt64) -> Double, _ body: (Double, SIMD3<Double>) -> Void
    ) throws(ExportError) {
        let reader = try SensorReader(session: session, stream: stream)
        while let sample = try reader.next() {
            guard let rate = channels.rate(sample.values) else { continue }
            body(seconds(sample.captureNs), rate)
        }
    }

    /// A camera's motion over `window`, and its frames' median uncertainty; a refusal when its
    /// frames are too small to align. Throws when they cannot be read at all.
    private static func cameraMotion(
        _ session: ExportSession, _ stream: ExportSession.Stream, _ calibrated: CameraCalibration?,
        window: ClosedRange<Double>, seconds: (UInt64) -> Double
    ) throws(ExportError) -> Result<(CameraMotion, uncertainty: Double?), SyncCheckRefusal> {
        if let unreadable = stream.unreadable {
            return .failure(SyncCheckRefusal(reason: .unreadable, message: unreadable))
        }
        let format = stream.format!
        let working = GreyImage.workingSize(width: format.width, height: format.height)
        let minimum = GreyImage.minimumWorkingSize
        guard working.width >= minimum.width, working.height >= minimum.height else {
            return .failure(
                SyncCheckRefusal(
                    reason: .tooSmall,
                    message: "\(stream.id)'s frames, \(format.width)x\(format.height), are too small to align "
                        + "(\(working.width)x\(working.height) after averaging, \(minimum.width)x\(minimum.height) "
                        + "needed): record it at 160x120 or more"))
        }
        let factor = GreyImage.factor(forWidth: format.width)
        // The intrinsics are for the calibration's image size; a camera recorded at another
        // size of the same sensor scales with it.
        let focal =
            calibrated.map { calibration -> (x: Double, y: Double) in
                let scaleX = Double(format.width) / Double(calibration.width)
                let scaleY = Double(format.height) / Double(calibration.height)
                return (calibration.fx * scaleX / Double(factor), calibration.fy * scaleY / Double(factor))
            }
            ?? {
                let nominal = TexturedScene.nominalFocalLength(width: format.width) / Double(factor)
                return (nominal, nominal)
            }()
        var motion = CameraMotion(focalLength: focal)
        var uncertainties: [UInt64] = []
        let converter = try PixelConverter(format: format, layout: .grey8)
        converter.requiresRecordedSize = true
        let reader = try CameraReader(session: session, stream: stream)
        defer { reader.cancel() }
        while let frame = try reader.next() {
            let time = seconds(frame.captureNs)
            guard time >= window.lowerBound else { continue }
            guard time <= window.upperBound else { break }
            if let uncertainty = frame.uncertaintyNs { uncertainties.append(uncertainty) }
            // One frame that does not decode loses its two pairs, not the camera.
            guard let pixels = try? converter.pixels(frame.bytes), pixels.width == format.width,
                pixels.height == format.height
            else {
                motion.skip()
                continue
            }
            let image = pixels.bytes.withUnsafeBytes {
                GreyImage(grey8: $0, width: pixels.width, height: pixels.height, factor: factor)
            }
            motion.add(image, at: time)
        }
        uncertainties.sort()
        let uncertainty = uncertainties.isEmpty ? nil : Double(uncertainties[uncertainties.count / 2]) / 1e9
        return .success((motion, uncertainty))
    }
}

/// Which of a sensor stream's channels are its gyroscope's axes (`anglvel_*` or `gyro_*`). An
/// IMU with only some (a yaw-rate sensor's `anglvel_z`) reads the others as 0: the turn compared
/// is about the axes it has, which a camera's turn about them still follows.
///
/// Thread-safe (a value).
public struct GyroChannels: Sendable {
    /// Each axis's channel position (x, y, z), nil where the stream has none.
    let positions: [Int?]

    /// nil for a stream with no gyroscope axis.
    public init?(channels: [String]) {
        positions = IMULayout(channels: channels).gyro
        guard positions.contains(where: { $0 != nil }) else { return nil }
    }

    /// The axes the stream lacks, read as 0.
    public var missingAxes: [String] { zip(["x", "y", "z"], positions).filter { $1 == nil }.map(\.0) }

    /// The rate (rad/s) in a sample's values; nil when an axis the stream has is not a number.
    public func rate(_ values: [Double?]) -> SIMD3<Double>? {
        var rate = SIMD3<Double>.zero
        for (axis, position) in positions.enumerated() {
            guard let position else { continue }
            guard position < values.count, let value = values[position], value.isFinite else { return nil }
            rate[axis] = value
        }
        return rate
    }
}

/// A gyroscope's turning, second by second: where the rig was waved the most, so the check
/// analyses that stretch of a long recording and holds only its samples.
///
/// Thread-bound.
struct ExcitationBins {
    /// Each whole second's sum of rates, sum of squared rates and count, from `first`.
    private var bins: [(sum: SIMD3<Double>, squares: Double, count: Int)] = []
    private var first: Int?

    /// Bins past this many seconds from the first are not made: a stamp years out (a damaged
    /// line) must not make a huge array.
    static let maximumSeconds = 7 * 24 * 3600

    mutating func add(_ rate: SIMD3<Double>, at time: Double) {
        guard time.isFinite, abs(time) < 1e12 else { return }
        let second = Int(time.rounded(.down))
        if first == nil { first = second }
        guard let first else { return }
        let index = second - first
        guard index >= 0, index < Self.maximumSeconds else { return }
        if index >= bins.count { bins += Array(repeating: (.zero, 0, 0), count: index - bins.count + 1) }
        bins[index].sum += rate
        bins[index].squares += (rate * rate).sum()
        bins[index].count += 1
    }

    /// The `length` seconds (whole seconds) whose rms rate about its mean is highest; nil when
    /// the whole track is no longer (every stretch is then the whole).
    func mostExcited(length: Double) -> ClosedRange<Double>? {
        let width = Int(length.rounded(.up))
        guard let first, bins.count > width else { return nil }
        var best: (score: Double, start: Int)?
        var sum = SIMD3<Double>.zero, squares = 0.0, count = 0
        for index in bins.indices {
            sum += bins[index].sum
            squares += bins[index].squares
            count += bins[index].count
            if index >= width {
                sum -= bins[index - width].sum
                squares -= bins[index - width].squares
                count -= bins[index - width].count
            }
            guard index >= width - 1, count > 0 else { continue }
            let mean = sum / Double(count)
            let score = squares / Double(count) - (mean * mean).sum()
            if best == nil || score > best!.score { best = (score, index - width + 1) }
        }
        guard let best else { return nil }
        let start = Double(first + best.start)
        return start...(start + Double(width))
    }
}
