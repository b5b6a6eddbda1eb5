import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// An IMU without hardware: plausible accelerometer (m/s²) and gyroscope (rad/s) readings of a
/// rig swaying gently, at a fixed rate, stamped through the same path as a real device.
///
/// Threading: immutable once made; `run` keeps its state in locals on the capture thread.
public final class SyntheticIMU: CaptureSource, @unchecked Sendable {
    public static let channelNames = ["accel_x", "accel_y", "accel_z", "gyro_x", "gyro_y", "gyro_z"]

    public let descriptor: StreamDescriptor
    private let periodNs: UInt64
    /// Gyroscope rates of a rig turned by hand rather than the gentle sway, read at each sample's
    /// stamp (CLOCK_MONOTONIC_RAW, in seconds): the truth a synthetic camera with the same motion
    /// shares, for `fieldcap check-sync`.
    public let motion: HandMotion?
    /// How late its stamps are, in seconds: a sample stamped `t` reads the turning at `t - delay`
    /// (as a turning synthetic camera's frame does).
    public let delay: Double

    /// - Parameters:
    ///   - id: the stream id.
    ///   - rate: samples per second (1 to 100,000).
    ///   - motion: the rig's turning, for the gyroscope; nil for the gentle sway.
    ///   - delay: how late its stamps are against `motion`, in seconds.
    public init(id: String = "imu", rate: Double = 200, motion: HandMotion? = nil, delay: Double = 0) {
        self.motion = motion
        self.delay = delay
        precondition(rate > 0, "a synthetic IMU needs a positive rate")
        descriptor = StreamDescriptor(
            id: id, kind: .sensor, channels: Self.channelNames, nominalRate: rate, device: "synthetic:\(rate.formatted)"
        )
        periodNs = UInt64(1e9 / rate)
    }

    /// The reading at `t` seconds: gravity on z, a slow sway, and gyro rates consistent with it.
    public static func reading(at t: Double, into record: inout CaptureRecord) {
        let sway = 0.6 * t
        record.values[0] = 0.35 * sin(sway)
        record.values[1] = 0.20 * cos(1.3 * sway)
        record.values[2] = -9.80665 + 0.05 * sin(2.1 * sway)
        record.values[3] = 0.6 * 0.1 * cos(sway)
        record.values[4] = -0.6 * 0.08 * sin(1.3 * sway)
        record.values[5] = 0.02 * sin(0.4 * sway)
        record.valueCount = 6
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        // Sleep to each sample's due time on CLOCK_MONOTONIC (clock_nanosleep cannot use RAW),
        // then stamp with CLOCK_MONOTONIC_RAW right after waking, as a real dequeue is stamped.
        var due = MonotonicClock.read(CLOCK_MONOTONIC)
        var sequence: UInt64 = 0
        var record = CaptureRecord()
        let start = MonotonicClock.now()
        while !stop.isRequested {
            due += periodNs
            var wake = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
            _ = SystemCall.retryingInterruptedCode { clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) }
            let now = MonotonicClock.now()
            record.sequence = sequence
            record.dequeueNs = now
            record.captureNs = now
            // The sample is taken at wake-up; its timing is as good as the scheduler's.
            record.uncertaintyNs = 100_000
            Self.reading(at: Double(now - start) / 1e9, into: &record)
            if let motion {
                let rate = motion.angularVelocity(at: Double(now) / 1e9 - delay)
                (record.values[3], record.values[4], record.values[5]) = (rate.x, rate.y, rate.z)
            }
            ring.push(record, sequence: sequence)
            sequence += 1
        }
    }
}

extension SyntheticIMU {
    /// Each channel's unit.
    static let units = ["m/s²", "m/s²", "m/s²", "rad/s", "rad/s", "rad/s"]

    public var report: SourceReport {
        SourceReport(
            kind: "synthetic",
            granted: [
                "device": "synthetic",
                "source": .string(motion == nil ? "a rig swaying gently" : "a rig turned by hand"),
                "channels": .array(
                    zip(Self.channelNames, Self.units).map { ["name": .string($0), "unit": .string($1)] }),
                "rate": .double(descriptor.nominalRate),
            ],
            summary: "accel_x accel_y accel_z (m/s²) gyro_x gyro_y gyro_z (rad/s), "
                + "\(SourceReport.rate(descriptor.nominalRate)) Hz, stamped at its due time",
            timeSource: "dequeue", timestamps: SourceReport.dequeueTimestamps)
    }
}
