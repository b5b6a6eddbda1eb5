import FieldcapCore
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
    var directory: String

    static var kernel: String {
        var names = utsname()
        uname(&names)
        func field<T>(_ value: inout T) -> String {
            withUnsafeBytes(of: &value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "\(field(&names.sysname)) \(field(&names.release)) \(field(&names.version)) \(field(&names.machine))"
    }

    func write() throws {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let streams: [[String: Any]] = zip(sources, summary).map { source, stream in
            let descriptor = source.descriptor
            var entry: [String: Any] = [
                "id": descriptor.id, "kind": descriptor.kind.rawValue, "device": descriptor.device,
                "nominal_rate": descriptor.nominalRate, "written": stream.written,
                // Records are the source's own sequence numbers (frames or samples since start).
                "drops": ["count": stream.dropped, "records": stream.droppedRuns.map { [Int($0.lowerBound), Int($0.upperBound)] }],
                "timestamps": [
                    "capture_ns": "CLOCK_MONOTONIC_RAW read right after the frame or sample was dequeued",
                    "uncertainty_ns": "how far capture_ns may be from the moment of capture: the source's own timing (synthetic sources: the scheduler's wake-up)",
                ],
            ]
            if let format = descriptor.videoFormat {
                entry["format"] = ["width": format.width, "height": format.height, "pixel_format": format.pixelFormat.rawValue]
                entry["video_path"] = "\(descriptor.id).mkv"
                entry["frames_path"] = "\(descriptor.id).frames.ndjson"
            }
            if !descriptor.channels.isEmpty { entry["channels"] = descriptor.channels }
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
                    "uncertainty_ns": "the width of the clock pair's bracket, at least 1 µs; the driver's own stamping latency is not included",
                ]
            }
            if let error = stream.captureError { entry["ended_early"] = error }
            return entry
        }
        let document: [String: Any] = [
            "fieldcap_version": Fieldcap.version,
            "host_id": hostId,
            "hostname": ProcessInfo.processInfo.hostName,
            "kernel": Self.kernel,
            "started_utc": iso.string(from: startedWall),
            "stopped_utc": iso.string(from: stoppedWall),
            "stop_reason": stopReason,
            "sync_point": ["monotonic_ns": syncPoint.monotonicNs, "wall_clock_ns": syncPoint.wallClockNs],
            "streams": streams,
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
        let path = "\(directory)/fieldcap.json"
        try (data + Data("\n".utf8)).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
