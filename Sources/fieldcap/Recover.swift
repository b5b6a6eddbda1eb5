import ArgumentParser
import FieldcapCore
import FieldcapMedia
import Foundation
import SyncField

struct Recover: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Finish a session the recorder could not (SIGKILL, a crash, a power cut).",
        discussion: """
            fieldcap writes fieldcap.json with the host id, the sync point and the streams as a
            recording starts, and makes every file durable at least once a second. recover uses
            that to finish the session:

              - each video is rewritten to play to its last complete frame (a frame cut short by
                the end of the file is left out);
              - lines that did not reach the disk whole, or read back damaged, are cut from the
                end of every .jsonl and .ndjson file;
              - a camera's timestamp lines are cut to the frames its video holds, and an IMU's
                timestamp and sensor lines to the samples both files have;
              - sync_point.json and manifest.json are written as the recorder would have, and
                fieldcap.json says what was recovered.

            Then it validates the session. A session that is already complete and valid, or a
            directory fieldcap did not record, is left untouched. Exit status: 0 when the session
            is valid (recovered or already), 1 when it still has problems, 65 for a directory that
            is not a fieldcap session, 64 for a usage error.
            """)

    @Argument(help: "The session directory.", completion: .directory)
    var directory: String

    func validate() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ValidationError("\(directory) does not exist; give a session directory")
        }
        guard isDirectory.boolValue else { throw ValidationError("\(directory) is a file; give a session directory") }
    }

    func run() throws {
        guard let start = SessionStart(directory: directory) else {
            FileHandle.standardError.write(Data("Error: \(directory) is not a fieldcap session (no readable fieldcap.json with its streams and sync point): nothing changed\n".utf8))
            throw ExitCode(65)
        }
        if start.state != "recording" && SessionValidator.validate(directory: directory).isValid {
            print("\(directory): the session is \(start.state) and valid; nothing to recover")
            return
        }
        try SessionFinisher.finish(directory: directory, start: start, rewriteVideos: true, state: "recovered") { print($0) }

        let report = SessionValidator.validate(directory: directory)
        for problem in report.problems { print("\(directory)/\(problem)") }
        if report.isValid {
            print("\(directory): recovered; valid SyncField 0.1 session, \(report.streamCount) streams, \(report.lineCount) timestamp lines")
        } else {
            print("\(directory): recovered, but \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s") remain")
            throw ExitCode(1)
        }
    }
}

/// Brings a session's files into agreement after its recording ended without `stop()`
/// finishing them (killed, or stopped by a full disk): the steps of `fieldcap recover`.
enum SessionFinisher {
    /// - Parameters:
    ///   - rewriteVideos: rewrite each video to its last whole frame (it then plays as a finished
    ///     file); without it the videos are only read, for a disk with no room to rewrite them.
    ///   - state: what fieldcap.json's `state` becomes.
    ///   - say: one line per stream on what was kept.
    static func finish(
        directory: String, start: SessionStart, rewriteVideos: Bool, state: String, say: (String) -> Void
    ) throws {
        var counts: [String: Int] = [:]
        var recorded: Set<String> = []
        var links: [String: String] = [:]
        var notes: [String: Any] = [:]
        for stream in start.streams {
            let base = "\(directory)/\(stream.id)"
            if let format = stream.format {
                let frames = rewriteVideos
                    ? try MatroskaSalvage.salvage(path: "\(base).mkv", format: format, nominalRate: stream.nominalRate)
                    : MatroskaSalvage.countFrames(path: "\(base).mkv", format: format)
                let stamps = try SessionRecovery.trimJSONLines(path: "\(base).timestamps.jsonl", limit: frames)
                let log = try SessionRecovery.trimJSONLines(path: "\(base).frames.ndjson", limit: frames)
                counts[stream.id] = stamps.keptLines
                links[stream.id] = stream.linkedPath ?? "\(directory)/\(stream.id).mkv"
                notes[stream.id] = ["frames_in_video": frames, "timestamp_lines": stamps.keptLines, "timestamps_cut_bytes": stamps.cutBytes,
                                    "frames_log_cut_bytes": log.cutBytes]
                say("  \(stream.id): \(frames) frames in \(stream.id).mkv, \(stamps.keptLines) timestamp lines kept (\(stamps.cutBytes) bytes cut)")
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
        // The sidecar as it stands now (the end's, when the recorder got to write it).
        var document = SessionStart(directory: directory)?.document ?? start.document
        document["state"] = state
        document["recovery"] = ["recovered_utc": ISO8601DateFormatter().string(from: Date()), "was": start.state, "streams": notes]
        try Sidecar.store(document, directory: directory)
    }
}

/// What `fieldcap.json` says about a session, as recorder wrote it at start (or at the end).
struct SessionStart {
    struct Stream {
        var id: String
        var nominalRate: Double
        var format: VideoFormat?
        var linkedPath: String?
    }

    var document: [String: Any]
    var state: String
    var syncPoint: SyncPoint
    var streams: [Stream]

    init?(directory: String) {
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
}
