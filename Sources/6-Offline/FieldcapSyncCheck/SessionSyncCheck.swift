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
    /// The median `uncertainty_ns` of the camera's frames, in seconds: what its stamps claim.
    public var frameUncertainty: Double

    /// The measured offset is larger than the frames' own uncertainty: their stamps are further
    /// from the instant the IMU saw than they claim (or the IMU's are).
    public var exceedsFrameUncertainty: Bool {
        guard case .success(let estimate) = alignment else { return false }
        return abs(estimate.offset) > frameUncertainty
    }

    /// The measured and calibrated time shifts differ by more than a quarter of a frame period.
    public var disagreesWithCalibration: Bool {
        guard let calibratedTimeshift, case .success(let estimate) = alignment else { return false }
        return abs(estimate.timeshiftCamIMU - calibratedTimeshift) > estimate.framePeriod / 4
    }
}

/// `fieldcap check-sync`: the offset between each camera and each IMU with a gyroscope of a
/// finished session, read with the exports' readers (so the session is validated first).
public enum SessionSyncCheck {
    /// Each camera against each gyroscope, cameras in the session's order. `progress` hears each
    /// stream's id as it starts reading it.
    public static func check(
        directory: String, maximumOffset: Double = 0.5, progress: ((String) -> Void)? = nil
    ) throws(ExportError) -> [SyncCheckPair] {
        let session = try ExportSession(directory: directory)
        let calibration = try session.readCalibration()
        let origin = session.syncPoint.monotonicNs
        func seconds(_ captureNs: UInt64) -> Double { Double(Int64(bitPattern: captureNs &- origin)) / 1e9 }

        var gyros: [(id: String, track: GyroTrack)] = []
        for stream in session.streams where !stream.isCamera {
            let reader = try SensorReader(session: session, stream: stream)
            var samples: [(time: Double, rate: SIMD3<Double>)] = []
            var layout: IMULayout?
            while let sample = try reader.next() {
                if layout == nil {
                    layout = IMULayout(channels: reader.channels)
                    guard layout!.hasGyroscope else { break }
                    progress?(stream.id)
                }
                guard let rate = layout!.gyroscope(sample.values), rate.allSatisfy(\.isFinite) else { continue }
                samples.append((seconds(sample.captureNs), SIMD3(rate[0], rate[1], rate[2])))
            }
            if !samples.isEmpty { gyros.append((stream.id, GyroTrack(samples: samples))) }
        }
        guard !gyros.isEmpty else {
            throw ExportError(
                .session,
                "\(directory) has no IMU with a gyroscope (anglvel_* or gyro_* channels): "
                    + "record one beside the cameras to check their offset")
        }
        let cameras = session.streams.filter { $0.isCamera && !$0.recordedNothing }
        guard !cameras.isEmpty else {
            throw ExportError(.session, "\(directory) has no camera with frames: nothing to check against the IMU")
        }

        var pairs: [SyncCheckPair] = []
        for stream in cameras {
            progress?(stream.id)
            let format = stream.format!
            let factor = GreyImage.factor(forWidth: format.width)
            let calibrated = calibration[stream.id]
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
            let reader = try CameraReader(session: session, stream: stream)
            defer { reader.cancel() }
            while let frame = try reader.next() {
                let pixels = try converter.pixels(frame.bytes)
                let image = pixels.bytes.withUnsafeBytes {
                    GreyImage(grey8: $0, width: pixels.width, height: pixels.height, factor: factor)
                }
                motion.add(image, at: seconds(frame.captureNs))
                uncertainties.append(frame.uncertaintyNs)
            }
            uncertainties.sort()
            let uncertainty = uncertainties.isEmpty ? 0 : Double(uncertainties[uncertainties.count / 2]) / 1e9
            for gyro in gyros {
                func estimate(_ method: OffsetMethod) -> Result<OffsetEstimate, SyncCheckRefusal> {
                    Result { () throws(SyncCheckRefusal) in
                        try OffsetEstimator.estimate(
                            camera: motion, gyro: gyro.track, method: method, maximumOffset: maximumOffset)
                    }
                }
                pairs.append(
                    SyncCheckPair(
                        camera: stream.id, imu: gyro.id, alignment: estimate(.imageAlignment),
                        differenceEnergy: estimate(.differenceEnergy),
                        calibratedTimeshift: calibrated?.timeshiftCamIMU, usedIntrinsics: calibrated != nil,
                        frameUncertainty: uncertainty))
            }
        }
        return pairs
    }
}
