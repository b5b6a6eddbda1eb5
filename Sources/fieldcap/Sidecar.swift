import FieldcapCore
import FieldcapIIO
import FieldcapMedia
import FieldcapV4L2
import Foundation
import SyncField

/// `fieldcap.json`: what the SyncField format has no place for. It sits beside the SyncField
/// files, which stay byte-compatible with the SDK.
struct Sidecar {
    var hostId: String
    var syncPoint: SyncPoint
    var startedWall: Date
    var stoppedWall: Date
    var stopReason: String
    var sources: [CaptureSource]
    var summary: [Recorder.StreamSummary]
    /// How each video's frames went to its file (`VideoSessionSink.videoWrites`).
    var videoWrites: [String: String] = [:]
    /// Writes and syncs that took `diskStallNs` or longer, per file (`DiskWatch.summary`).
    var diskStalls: [DiskWatch.Summary] = []
    var diskStallNs: UInt64 = DiskWatch().stallNs
    var directory: String
    /// The directory as the session's `link()` paths spell it.
    var linkDirectory: String

    static var kernel: String {
        var names = utsname()
        uname(&names)
        func field<T>(_ value: inout T) -> String {
            withUnsafeBytes(of: &value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "\(field(&names.sysname)) \(field(&names.release)) \(field(&names.version)) \(field(&names.machine))"
    }

    static func iioEntry(_ imu: IIOIMU) -> [String: Any] {
        var timeSource: String
        switch imu.timeSource {
        case .kernelRaw: timeSource = "timestamp channel in monotonic_raw"
        case .kernelMapped(let clock): timeSource = "timestamp channel in \(clock), mapped into CLOCK_MONOTONIC_RAW"
        case .extrapolated: timeSource = "no timestamp channel: extrapolated back from each read (T - (N-1-i) * period)"
        }
        var entry: [String: Any] = [
            "device_id": imu.device.id, "name": imu.device.name, "granted_rate": imu.grantedRate,
            "trigger": imu.trigger ?? NSNull(), "time_source": timeSource, "samples_read": imu.samplesRead,
            "timeline_gaps": ["events": imu.gapEvents, "samples_missing": imu.timelineGaps.count,
                              "records": imu.timelineGaps.droppedRuns.map { [Int($0.lowerBound), Int($0.upperBound)] }],
            "non_increasing_times": imu.nonIncreasingTimes,
            "reclaimed_buffer_left_enabled": imu.reclaimedStaleBuffer,
            "channels": imu.valueChannels.map {
                ["name": $0.name, "kernel_channel": $0.kernelChannel, "unit": $0.unit, "scale": $0.scale,
                 "offset": $0.offset, "scan_format": $0.format] as [String: Any]
            },
        ]
        if case .kernelMapped(let clock) = imu.timeSource {
            entry["clock_steps"] = imu.clockSteps
            entry["clock_mapping"] = imu.clockMapping.map {
                ["from": clock, "to": "CLOCK_MONOTONIC_RAW", "last_bracket_ns": $0.latestBracketNs,
                 "offset_ns": $0.latestOffsetNs, "drift_ppm": $0.driftPPM] as [String: Any]
            } ?? [:]
        }
        return entry
    }

    static func iioTimestamps(_ imu: IIOIMU) -> [String: String] {
        switch imu.timeSource {
        case .kernelRaw:
            return ["capture_ns": "the sample's own timestamp channel, stamped by the kernel in CLOCK_MONOTONIC_RAW",
                    "uncertainty_ns": "1 µs: the kernel stamps in the trigger's interrupt; the sensor's own sampling delay is not included"]
        case .kernelMapped:
            return ["capture_ns": "the sample's own timestamp channel, mapped into CLOCK_MONOTONIC_RAW by a clock pair taken at every read (steps of the clock are detected)",
                    "uncertainty_ns": "1 µs plus the clock mapping's bound (half the latest pair's bracket plus the slope's error over the distance from it)"]
        case .extrapolated:
            return ["capture_ns": "CLOCK_MONOTONIC_RAW at the read, minus one period per sample still to come in that read",
                    "uncertainty_ns": "one sample period"]
        }
    }

    /// What a stream is, as known at start: enough for `fieldcap recover` to finish a session.
    static func streamEntry(_ descriptor: StreamDescriptor, linkDirectory: String) -> [String: Any] {
        var entry: [String: Any] = [
            "id": descriptor.id, "kind": descriptor.kind.rawValue, "device": descriptor.device,
            "nominal_rate": descriptor.nominalRate,
        ]
        if let format = descriptor.videoFormat {
            entry["format"] = ["width": format.width, "height": format.height, "pixel_format": format.pixelFormat.rawValue]
            entry["video_path"] = "\(descriptor.id).mkv"
            entry["frames_path"] = "\(descriptor.id).frames.ndjson"
            entry["linked_path"] = "\(linkDirectory)/\(descriptor.id).mkv"
        }
        if !descriptor.channels.isEmpty { entry["channels"] = descriptor.channels }
        return entry
    }

    /// `fieldcap.json` as recording starts, with `"state": "recording"`: the host id, the sync
    /// point and the streams, which is what `fieldcap recover` needs if the process never gets
    /// to write the rest (SIGKILL, a power cut). `write()` replaces it at the end.
    /// `linkDirectory` is the directory as the session's `link()` paths spell it (the manifest
    /// gives each video's path as it was linked).
    static func writeStart(hostId: String, syncPoint: SyncPoint, sources: [CaptureSource], directory: String, linkDirectory: String) throws {
        let document: [String: Any] = [
            "fieldcap_version": Fieldcap.version, "state": "recording", "host_id": hostId,
            "sync_point": ["monotonic_ns": syncPoint.monotonicNs, "wall_clock_ns": syncPoint.wallClockNs],
            "streams": sources.map { streamEntry($0.descriptor, linkDirectory: linkDirectory) },
        ]
        try store(document, directory: directory)
    }

    static func store(_ document: [String: Any], directory: String) throws {
        try SessionStart.store(document, directory: directory)
    }

    func write() throws {
        let streams: [[String: Any]] = zip(sources, summary).map { source, stream in
            var entry = Self.streamEntry(source.descriptor, linkDirectory: linkDirectory)
            entry["written"] = stream.written
            if let writes = videoWrites[source.descriptor.id] { entry["video_writes"] = writes }
            // Records are the source's own sequence numbers (frames or samples since start).
            entry["drops"] = ["count": stream.dropped, "records": stream.droppedRuns.map { [Int($0.lowerBound), Int($0.upperBound)] }]
            entry["timestamps"] = [
                "capture_ns": "CLOCK_MONOTONIC_RAW read right after the frame or sample was dequeued",
                "uncertainty_ns": "how far capture_ns may be from the moment of capture: the source's own timing (synthetic sources: the scheduler's wake-up)",
            ]
            if let camera = source as? V4L2Camera {
                entry["v4l2"] = [
                    "driver": camera.identity.driver, "card": camera.identity.card, "bus": camera.identity.bus,
                    "granted_rate": camera.grantedRate,
                    "kernel_sequence_gaps": ["count": camera.sequenceGaps.count,
                                             "records": camera.sequenceGaps.droppedRuns.map { [Int($0.lowerBound), Int($0.upperBound)] }],
                    "frames_stamped_at_dequeue": camera.untrustedTimestamps,
                    "frames_with_error_flag": camera.errorFlaggedFrames,
                    "controls": Dictionary(uniqueKeysWithValues: camera.appliedControls.map {
                        ($0.name, ["asked": $0.asked, "granted": $0.granted])
                    }),
                    "clock_mapping": camera.clockMapping.map {
                        ["from": "CLOCK_MONOTONIC", "to": "CLOCK_MONOTONIC_RAW", "last_bracket_ns": $0.latestBracketNs,
                         "offset_ns": $0.latestOffsetNs, "drift_ppm": $0.driftPPM] as [String: Any]
                    } ?? [:],
                ]
                entry["timestamps"] = [
                    "capture_ns": "the buffer's kernel timestamp (CLOCK_MONOTONIC) mapped into CLOCK_MONOTONIC_RAW by a clock pair re-sampled every second; the dequeue time for frames whose timestamp could not be trusted (counted in frames_stamped_at_dequeue)",
                    "uncertainty_ns": "mapped frames: 1 µs (the kernel's timeval resolution) plus the clock mapping's bound (half the bracket of the latest clock pair, plus the slope's error over the distance from it); the driver's own stamping latency is not included. Frames stamped at dequeue: one frame period",
                ]
            }
            if let imu = source as? IIOIMU { entry["iio"] = Self.iioEntry(imu); entry["timestamps"] = Self.iioTimestamps(imu) }
            if let error = stream.captureError {
                entry["ended_early"] = error
                if let at = stream.endedEarlyAtNs {
                    entry["ended_early_at"] = ["monotonic_raw_ns": at, "seconds_after_start": Double(Int64(bitPattern: at &- syncPoint.monotonicNs)) / 1e9]
                }
            }
            return entry
        }
        let document: [String: Any] = [
            "fieldcap_version": Fieldcap.version,
            "host_id": hostId,
            "hostname": ProcessInfo.processInfo.hostName,
            "kernel": Self.kernel,
            "started_utc": SessionStart.utc(startedWall),
            "stopped_utc": SessionStart.utc(stoppedWall),
            "stop_reason": stopReason,
            "state": "complete",
            "sync_point": ["monotonic_ns": syncPoint.monotonicNs, "wall_clock_ns": syncPoint.wallClockNs],
            "streams": streams,
            "disk_stalls": diskStallsEntry,
        ]
        try Self.store(document, directory: directory)
    }

    /// Which files waited for the disk for `diskStallNs` or longer in one operation, how often,
    /// how long, and when first (seconds after the sync point): a slow card or a stalled disk.
    var diskStallsEntry: [String: Any] {
        [
            "threshold_seconds": Double(diskStallNs) / 1e9,
            "files": diskStalls.map {
                [
                    "file": $0.file, "operation": $0.operation.rawValue, "count": $0.count, "seconds": $0.totalSeconds,
                    "longest_seconds": $0.longestSeconds,
                    "first_at_seconds": Double(Int64(bitPattern: $0.firstStartedNs &- syncPoint.monotonicNs)) / 1e9,
                ] as [String: Any]
            },
        ]
    }
}
