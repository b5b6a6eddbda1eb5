import FieldcapCore
import Foundation
import SyncField

/// Brings a session's files into agreement after its recording ended without `stop()`
/// finishing them (killed, or stopped by a full disk): the steps of `fieldcap recover`.
public enum SessionFinisher {
    public enum Outcome {
        /// No readable fieldcap.json with streams and a sync point: nothing was changed.
        case notAFieldcapSession
        /// Already finished and valid: nothing was changed.
        case alreadyValid(state: String)
        /// Finished; the validator's report on the result.
        case recovered(SessionValidator.Report)
    }

    /// What `fieldcap recover DIR` does: finish the session unless it is foreign or already
    /// complete and valid, then validate it.
    public static func recover(directory: String, say: (String) -> Void) throws -> Outcome {
        guard let start = SessionStart(directory: directory) else { return .notAFieldcapSession }
        if start.state != "recording" && SessionValidator.validateWithVideos(directory: directory).isValid {
            return .alreadyValid(state: start.state)
        }
        try finish(directory: directory, start: start, rewriteVideos: true, state: "recovered", say: say)
        return .recovered(SessionValidator.validateWithVideos(directory: directory))
    }

    /// - Parameters:
    ///   - rewriteVideos: a video fieldcap cannot finish in place (another writer's layout) may be
    ///     rewritten; not on a disk with no room for a copy. fieldcap's own are finished in place.
    ///   - state: what fieldcap.json's `state` becomes.
    ///   - say: one line per stream on what was kept.
    public static func finish(
        directory: String, start: SessionStart, rewriteVideos: Bool, state: String, say: (String) -> Void
    ) throws {
        var counts: [String: Int] = [:]
        var recorded: Set<String> = []
        var links: [String: String] = [:]
        var notes: [String: Any] = [:]
        for stream in start.streams {
            let base = "\(directory)/\(stream.id)"
            if let format = stream.format {
                let camera = try CameraRecovery.recover(
                    base: base, format: format, nominalRate: stream.nominalRate, hostId: start.syncPoint.hostId,
                    rewriteVideo: rewriteVideos)
                counts[stream.id] = camera.frames
                links[stream.id] = stream.linkedPath ?? "\(directory)/\(stream.id).mkv"
                notes[stream.id] = [
                    "frames_in_video": camera.frames, "timestamp_lines": camera.frames,
                    "timestamp_lines_restored": camera.restoredLines, "frames_cut": camera.framesCut,
                    "timestamps_cut_bytes": camera.timestampsCutBytes, "frames_log_cut_bytes": camera.frameLogCutBytes,
                ]
                var detail: [String] = []
                if camera.restoredLines > 0 { detail.append("\(camera.restoredLines) restored from \(stream.id).frames.ndjson") }
                if camera.framesCut > 0 { detail.append("\(camera.framesCut) frames without a timestamp line cut from the video") }
                if camera.timestampsCutBytes > 0 { detail.append("\(camera.timestampsCutBytes) bytes of timestamp lines cut") }
                say("  \(stream.id): \(camera.frames) frames in \(stream.id).mkv and \(camera.frames) timestamp lines"
                    + (detail.isEmpty ? "" : " (\(detail.joined(separator: "; ")))"))
            } else {
                // A sample is its timestamp line and its sensor line: keep the samples both hold.
                let stamps = try SessionRecovery.trimJSONLines(path: "\(base).timestamps.jsonl")
                let sensor = try SessionRecovery.trimJSONLines(path: "\(base).jsonl")
                let samples = min(stamps.keptLines, sensor.keptLines)
                let stampsCut = try SessionRecovery.trimJSONLines(path: "\(base).timestamps.jsonl", limit: samples)
                let sensorCut = try SessionRecovery.trimJSONLines(path: "\(base).jsonl", limit: samples)
                counts[stream.id] = samples
                recorded.insert(stream.id)
                let cut = stamps.cutBytes + stampsCut.cutBytes + sensor.cutBytes + sensorCut.cutBytes
                notes[stream.id] = ["samples": samples, "cut_bytes": cut]
                say("  \(stream.id): \(samples) samples kept (\(cut) bytes cut)")
            }
        }
        try SessionRecovery.finish(directory: directory, syncPoint: start.syncPoint, timestampCounts: counts, recorded: recorded, links: links)
        // The space a killed recorder held in reserve (see the recorder's DiskReserve).
        unlink("\(directory)/.fieldcap-reserve")
        // The sidecar as it stands now (the end's, when the recorder got to write it).
        var document = SessionStart(directory: directory)?.document ?? start.document
        document["state"] = state
        var recovery: [String: Any] = ["recovered_utc": SessionStart.utc(Date()), "was": start.state, "streams": notes]
        if start.streams.contains(where: { $0.format != nil }) { recovery["camera_timestamps"] = CameraRecovery.method }
        document["recovery"] = recovery
        try SessionStart.store(document, directory: directory)
    }
}

/// What `fieldcap.json` says about a session, as the recorder wrote it at start (or at the end).
public struct SessionStart {
    public struct Stream: Sendable {
        public var id: String
        public var nominalRate: Double
        public var format: VideoFormat?
        public var linkedPath: String?
    }

    /// The whole document, to write back with changes.
    public var document: [String: Any]
    /// `recording` (written at start, never finished), `complete`, `recovered`, `stopped: ...`.
    public var state: String
    public var syncPoint: SyncPoint
    public var streams: [Stream]

    public init?(directory: String) {
        guard let data = FileManager.default.contents(atPath: "\(directory)/fieldcap.json"),
            let document = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let hostId = document["host_id"] as? String, StreamID.problem(with: hostId) == nil,
            let sync = document["sync_point"] as? [String: Any],
            let monotonic = (sync["monotonic_ns"] as? NSNumber)?.uint64Value,
            let wall = (sync["wall_clock_ns"] as? NSNumber)?.uint64Value,
            let entries = document["streams"] as? [[String: Any]]
        else { return nil }
        var streams: [Stream] = []
        for entry in entries {
            // Ids name files in the directory: only ones the recorder could have written.
            guard let id = entry["id"] as? String, StreamID.problem(with: id) == nil else { return nil }
            var format: VideoFormat?
            if let fields = entry["format"] as? [String: Any] {
                guard let width = fields["width"] as? Int, let height = fields["height"] as? Int,
                    let name = fields["pixel_format"] as? String, let pixel = VideoFormat.PixelFormat(rawValue: name),
                    (1...16384).contains(width), (1...16384).contains(height)
                else { return nil }
                format = VideoFormat(width: width, height: height, pixelFormat: pixel)
            }
            streams.append(Stream(
                id: id, nominalRate: (entry["nominal_rate"] as? Double) ?? 0, format: format,
                linkedPath: entry["linked_path"] as? String))
        }
        self.document = document
        state = (document["state"] as? String) ?? "complete"
        syncPoint = SyncPoint(monotonicNs: monotonic, wallClockNs: wall, hostId: hostId)
        self.streams = streams
    }

    /// A time in `fieldcap.json`: `2024-03-08T09:28:21.123Z`, spelled as the sync point's
    /// `iso_datetime` rather than with ISO8601DateFormatter, whose ICU set-up was a tenth of an
    /// IMU recording's start-up on a slow CPU.
    public static func utc(_ date: Date) -> String {
        SyncPoint.isoDatetime(wallClockNs: UInt64(max(0, date.timeIntervalSince1970 * 1e9)))
    }

    /// Writes `fieldcap.json` (sorted keys, atomically, fsynced).
    public static func store(_ document: [String: Any], directory: String) throws {
        try SyncSession.writeAtomically(try SidecarJSON.bytes(document), to: "\(directory)/fieldcap.json")
    }
}
