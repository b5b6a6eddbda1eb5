import FieldcapCore
import FieldcapMedia
import FieldcapSystem
import FoundationEssentials
import Glibc
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
        let layout = SessionLayout(directory: directory)
        guard let start = Sidecar.Contents(layout: layout) else { return .notAFieldcapSession }
        if start.state != "recording" && SessionValidator.validateWithVideos(directory: directory).isValid {
            return .alreadyValid(state: start.state)
        }
        try RecordingLock.refuseIfLive(directory, doing: "recover it")
        try finish(directory: directory, start: start, rewriteVideos: true, state: "recovered", say: say)
        return .recovered(SessionValidator.validateWithVideos(directory: directory))
    }

    /// Everything `finish` would refuse, asked before any file of the session changes, so that a
    /// refusal leaves the whole session as it was (#42): a file of the session that is a symbolic
    /// link (recover writes through no link: it may lead outside the session), a camera's video
    /// that cannot be recovered without losing what it holds. A segmented recording asks it of
    /// every segment it will finish before it finishes the first.
    public static func refuseWhatCannotBeRecovered(directory: String, start: Sidecar.Contents) throws {
        let layout = SessionLayout(directory: directory)
        let files =
            [layout.sidecar, layout.manifest, layout.syncPoint]
            + start.streams.flatMap { stream in
                [
                    layout.video(stream.id), layout.timestamps(stream.id), layout.frameLog(stream.id),
                    layout.sensor(stream.id),
                ]
            }
        if let link = files.first(where: PathName.isSymbolicLink) {
            throw CameraRecovery.Refusal(
                path: link, reason: "is a symbolic link, not a file of the session (recover writes through no link)")
        }
        for stream in start.streams {
            guard let format = stream.format else { continue }
            _ = try CameraRecovery.refuseDamage(
                .init(
                    video: layout.video(stream.id), timestamps: layout.timestamps(stream.id),
                    frameLog: layout.frameLog(stream.id)),
                format: format, nominalRate: stream.nominalRate)
        }
    }

    /// - Parameters:
    ///   - rewriteVideos: a video fieldcap cannot finish in place (another writer's layout) may be
    ///     rewritten; not on a disk with no room for a copy. fieldcap's own are finished in place.
    ///   - state: what fieldcap.json's `state` becomes.
    ///   - say: one line per stream on what was kept.
    public static func finish(
        directory: String, start: Sidecar.Contents, rewriteVideos: Bool, state: String, say: (String) -> Void
    ) throws {
        let layout = SessionLayout(directory: directory)
        var counts: [String: Int] = [:]
        var recorded: Set<String> = []
        var links: [String: String] = [:]
        var notes: [String: JSONValue] = [:]
        try refuseWhatCannotBeRecovered(directory: directory, start: start)
        for stream in start.streams {
            if let format = stream.format {
                let files = CameraRecovery.Files(
                    video: layout.video(stream.id), timestamps: layout.timestamps(stream.id),
                    frameLog: layout.frameLog(stream.id))
                let camera = try CameraRecovery.recover(
                    files, format: format, nominalRate: stream.nominalRate, hostId: start.syncPoint.hostId,
                    rewriteVideo: rewriteVideos)
                counts[stream.id] = camera.frames
                // The video recovered here, not the path recorded: a copied session's sidecar
                // still names the original's (#42).
                links[stream.id] = URL(fileURLWithPath: layout.video(stream.id)).standardizedFileURL.path
                notes[stream.id] = [
                    "frames_in_video": JSONValue(camera.frames), "timestamp_lines": JSONValue(camera.frames),
                    "timestamp_lines_restored": JSONValue(camera.restoredLines),
                    "frames_cut": JSONValue(camera.framesCut),
                    "timestamps_cut_bytes": JSONValue(camera.timestampsCutBytes),
                    "frames_log_cut_bytes": JSONValue(camera.frameLogCutBytes),
                ]
                var detail: [String] = []
                if camera.restoredLines > 0 {
                    detail.append("\(camera.restoredLines) restored from \(SessionLayout.frameLogName(stream.id))")
                }
                if camera.framesCut > 0 {
                    detail.append("\(camera.framesCut) frames without a timestamp line cut from the video")
                }
                if camera.timestampsCutBytes > 0 {
                    detail.append("\(camera.timestampsCutBytes) bytes of timestamp lines cut")
                }
                say(
                    "  \(stream.id): \(camera.frames) frames in \(stream.id).mkv and \(camera.frames) timestamp lines"
                        + (detail.isEmpty ? "" : " (\(detail.joined(separator: "; ")))"))
            } else {
                // A sample is its timestamp line and its sensor line: keep the samples both hold.
                let stamps = try SessionRecovery.trimJSONLines(path: layout.timestamps(stream.id))
                let sensor = try SessionRecovery.trimJSONLines(path: layout.sensor(stream.id))
                let samples = min(stamps.keptLines, sensor.keptLines)
                let stampsCut = try SessionRecovery.trimJSONLines(path: layout.timestamps(stream.id), limit: samples)
                let sensorCut = try SessionRecovery.trimJSONLines(path: layout.sensor(stream.id), limit: samples)
                counts[stream.id] = samples
                recorded.insert(stream.id)
                let cut = stamps.cutBytes + stampsCut.cutBytes + sensor.cutBytes + sensorCut.cutBytes
                notes[stream.id] = ["samples": JSONValue(samples), "cut_bytes": JSONValue(cut)]
                say("  \(stream.id): \(samples) samples kept (\(cut) bytes cut)")
            }
        }
        try SessionRecovery.finish(
            directory: directory, syncPoint: start.syncPoint, timestampCounts: counts, recorded: recorded, links: links)
        // The space a killed recorder held in reserve (see the recorder's DiskReserve).
        unlink(layout.reserve)
        // The sidecar as it stands now (the end's, when the recorder got to write it).
        var document = Sidecar.Contents(layout: layout)?.document ?? start.document
        document["state"] = .string(state)
        var recovery: [String: JSONValue] = [
            "recovered_utc": .string(Sidecar.utc(Date())), "was": .string(start.state), "streams": .object(notes),
        ]
        if start.streams.contains(where: { $0.format != nil }) {
            recovery["camera_timestamps"] = .string(CameraRecovery.method)
        }
        document["recovery"] = .object(recovery)
        try Sidecar.store(document, layout: layout)
    }
}
