import FieldcapCore
import FieldcapMedia
import FieldcapOutput
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

extension SessionValidator {
    /// Every rule `validate(directory:progress:)` checks, and the videos: each video stream's
    /// linked file exists, is Matroska with a video track, and holds as many frames as the
    /// manifest's `frame_count` (counted from the blocks' headers, without reading the frames).
    /// What `fieldcap validate` and `fieldcap recover` check. It lives here rather than in
    /// `SyncField`, whose validator knows no video format and needs no C library.
    ///
    /// A linked path is looked for first under its file name beside `manifest.json`, so a session
    /// copied off the rig is judged by its own videos, never the original's.
    ///
    /// In a session fieldcap finished, a stream's records further apart than its threshold
    /// (`holeThresholdNs`) must be documented in fieldcap.json (`holeProblems`), and its `away`
    /// entries must be well formed.
    public static func validateWithVideos(directory: String, progress: ((Progress) -> Void)? = nil) -> Report {
        let sidecar = FileManager.default.contents(atPath: SessionLayout(directory: directory).sidecar)
            .flatMap { JSONValue.parse($0) }
        let gaps = sidecarGaps(sidecar)
        // The holes are found as the SyncField rules read the timestamp lines: no second read.
        var report = validate(
            directory: directory, progress: progress,
            holesLongerThan: gaps.streams.isEmpty ? nil : { gaps.streams[$0]?.thresholdNs })
        let videos = videoProblems(directory: directory)
        report.problems += videos.problems
        report.warnings += videos.warnings
        report.problems += spanProblems(directory: directory)
        report.problems += gaps.problems
        // A derived member (check-sync's): a damaged one is said, and does not make the recording
        // unreadable (`check-sync --save` replaces it).
        report.warnings += syncCheckProblems(sidecar)
        report.problems += holeProblems(
            directory: directory, holes: report.holes, streams: gaps.streams,
            syncMonotonicNs: sidecar?["sync_point"]?["monotonic_ns"]?.uint64Value)
        return report
    }

    /// A `sync_check` member (`fieldcap check-sync --save`) should read as fieldcap writes it, its
    /// pairs naming the session's streams: what is wrong with it, as warnings.
    static func syncCheckProblems(_ sidecar: JSONValue?) -> [Problem] {
        guard let value = sidecar?[SyncCheckEntry.member] else { return [] }
        let streams = Set(sidecar?["streams"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        do throws(SyncCheckEntry.Problem) {
            _ = try SyncCheckEntry(json: value, streams: streams)
            return []
        } catch {
            return [Problem(file: SessionLayout.sidecarName, message: error.description)]
        }
    }

    /// How long after the stop a stream's last `capture_ns` may fall. Through the monotonic
    /// stop (`stopped_monotonic_raw_ns`): a segment cut late by a stalled host, at most. Through
    /// `stopped_utc` alone (sessions written before fieldcap kept the monotonic stop): a day,
    /// because the wall clock may have been stepped back (by NTP) during the recording while
    /// `capture_ns` counted on. Either tells a jump of the clock or damage (a 292-year jump once
    /// passed, and overflowed what reads the times) from any real session.
    static let monotonicSlackNs: UInt64 = 600 * 1_000_000_000
    static let wallSlackNs: UInt64 = 86_400 * 1_000_000_000

    /// A fieldcap session records until its stop (fieldcap.json): each stream's last timestamp
    /// line must fall no later than the slack after it. A session without a stop (killed,
    /// before `recover`) is not checked.
    static func spanProblems(directory: String) -> [Problem] {
        let layout = SessionLayout(directory: directory)
        func object(_ path: String) -> JSONValue? {
            FileManager.default.contents(atPath: path).flatMap { JSONValue.parse($0) }
        }
        guard let sidecar = object(layout.sidecar),
            let sync = object("\(directory)/\(SessionLayout.syncPointName)"),
            let syncMonotonic = sync["monotonic_ns"]?.unsignedValue,
            let manifest = object(layout.manifest), case .object(let streams)? = manifest["streams"]
        else { return [] }
        // The stop in the monotonic clock, and how it was known.
        let stopNs: UInt64, slackNs: UInt64, stop: String
        if let monotonic = sidecar["stopped_monotonic_raw_ns"]?.unsignedValue {
            (stopNs, slackNs, stop) = (monotonic, monotonicSlackNs, "stopped_monotonic_raw_ns \(monotonic)")
        } else if let stopped = sidecar["stopped_utc"]?.stringValue,
            let stoppedSeconds = SessionValidator.epochSeconds(stopped),
            let syncWall = sync["wall_clock_ns"]?.unsignedValue
        {
            // From the sync point to the stop on the wall clock (0 if it says the stop came
            // first); saturating, for absurd sidecars.
            let stopWallNs = stoppedSeconds * 1e9
            let untilStop =
                stopWallNs > Double(syncWall) ? min(Double(UInt64.max / 4), stopWallNs - Double(syncWall)) : 0
            let mapped = syncMonotonic.addingReportingOverflow(UInt64(untilStop))
            if mapped.overflow { return [] }
            (stopNs, slackNs, stop) = (mapped.partialValue, wallSlackNs, "\(stopped), through the sync point")
        } else {
            return []
        }
        let latest = stopNs.addingReportingOverflow(slackNs)
        if latest.overflow { return [] }
        var problems: [Problem] = []
        for stream in streams.sorted(by: { $0.key < $1.key }) {
            let id = stream.key, entry = stream.value
            // The stream's own file by its id: a path from the manifest could lead outside.
            let name = SessionLayout.timestampsName(id)
            guard entry["timestamps_path"] != nil, !id.contains("/"), id != "..",
                let capture = lastCapture(path: "\(directory)/\(name)"), capture > latest.partialValue
            else { continue }
            problems.append(
                Problem(
                    file: name,
                    message:
                        "the last line's capture_ns \(capture) is "
                        + "\(Self.spoken(seconds: Double(capture - stopNs) / 1e9)) "
                        + "after the recording stopped (\(stop), fieldcap.json): a jump "
                        + "of the clock or damage, not a time stream \(id) recorded"
                ))
        }
        return problems
    }

    /// The last line's `capture_ns` of a timestamps file, read from its end.
    static func lastCapture(path: String) -> UInt64? {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else { return nil }
        let tail = [UInt8](data.suffix(4096))
        guard let last = tail.split(separator: UInt8(ascii: "\n")).last else { return nil }
        return JSONValue.parse(last)?["capture_ns"]?.unsignedValue
    }

    /// "3.2 hours", "292 years": a span as a person reads it.
    static func spoken(seconds: Double) -> String {
        let units: [(Double, String)] = [(365.25 * 86_400, "year"), (86_400, "day"), (3_600, "hour")]
        for (size, name) in units where seconds >= size {
            let count = Int(seconds / size)
            return "\(count) \(name)\(count == 1 ? "" : "s")"
        }
        return "\(Int(seconds)) s"
    }

    /// The problems (and warnings) with the videos `manifest.json` links. A manifest that cannot
    /// be read gives none here: `validate` reports it.
    static func videoProblems(directory: String) -> (problems: [Problem], warnings: [Problem]) {
        var problems: [Problem] = []
        var warnings: [Problem] = []
        guard let data = FileManager.default.contents(atPath: SessionLayout(directory: directory).manifest),
            let streams = JSONValue.parse(data)?["streams"]?.objectValue
        else { return ([], []) }
        let recordedByFieldcap = FileManager.default.fileExists(atPath: SessionLayout(directory: directory).sidecar)
        // In the order the SDK writes the streams, which is the file's in every manifest it wrote.
        for id in JSONKeyOrder.sorted(streams.keys) {
            let entry = streams[id]!
            guard entry["type"]?.stringValue == "video", let path = entry["path"]?.stringValue else { continue }
            func problem(_ message: String) {
                problems.append(Problem(file: SessionLayout.manifestName, message: "streams.\(id).path: \(message)"))
            }
            guard let video = resolve(path, in: directory) else {
                let name = PathName.base(of: path)
                problem(
                    "\(path) does not exist"
                        + (path.hasPrefix("/") && !name.isEmpty ? " (nor does \(name) in the session directory)" : ""))
                continue
            }
            let shown = Self.relative(video, to: directory)
            let scan: MatroskaScan
            do { scan = try MatroskaScan(path: video) } catch {
                problem("\(shown) cannot be read: \(error)")
                continue
            }
            guard scan.isMatroska else {
                let name = PathName.base(of: video)
                let pathExtension = name.lastIndex(of: ".").map { String(name[name.index(after: $0)...]) } ?? ""
                let named = ["mkv", "mka", "mk3d", "webm"].contains(pathExtension.lowercased())
                if recordedByFieldcap || named {
                    problem("\(shown) is not a Matroska file (no EBML header with DocType matroska or webm)")
                } else {
                    warnings.append(
                        Problem(
                            file: SessionLayout.manifestName,
                            message:
                                "streams.\(id).path: \(shown) is not a Matroska file, so its frames were not counted"))
                }
                continue
            }
            guard scan.hasVideoTrack else {
                problem("\(shown) has no video track")
                continue
            }
            // Linked and never stamped (no timestamps file, no frame_count): in fieldcap's
            // sessions, a camera that recorded nothing here, whose device was away. Its video
            // then holds the track and no frame; a frame without its timestamp line is damage.
            if recordedByFieldcap && entry["timestamps_path"] == nil && entry["frame_count"] == nil
                && !scan.frames.isEmpty
            {
                problem(
                    "\(shown) holds \(scan.frames.count) frames but the manifest lists no timestamps file "
                        + "for it: the video and its timestamp lines disagree")
            }
            if let count = entry["frame_count"]?.integerValue, count != Int64(scan.frames.count) {
                problems.append(
                    Problem(
                        file: SessionLayout.manifestName,
                        message:
                            "streams.\(id).frame_count is \(count) but \(shown) holds \(scan.frames.count) frames: "
                            + (recordedByFieldcap
                                ? "`fieldcap recover` brings the video and its timestamp lines back into agreement"
                                : "the video and its timestamp lines disagree")))
            }
            // In fieldcap's sessions a frame_number is the frame's index in the video, which
            // export and extract rely on; SyncField alone asks only that the numbers rise (#42).
            if recordedByFieldcap, let problem = frameNumberProblem(directory: directory, id: id) {
                problems.append(problem)
            }
        }
        return (problems, warnings)
    }

    /// The first timestamp line of a video stream whose `frame_number` is not its index (line
    /// N holds frame N - 1), read without parsing the lines' JSON; nil when all are.
    static func frameNumberProblem(directory: String, id: String) -> Problem? {
        let name = SessionLayout.timestampsName(id)
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)"), options: .alwaysMapped)
        else { return nil }
        let key = Array(#""frame_number":"#.utf8)
        return data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Problem? in
            var index = 0
            var lineStart = 0
            while lineStart < bytes.count {
                var lineEnd = lineStart
                while lineEnd < bytes.count && bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                // The key, then its digits; a line without them is the SyncField rules' to report.
                var at = lineStart
                var found = false
                while at + key.count <= lineEnd {
                    if bytes[at] == key[0] && zip(key.indices, key).allSatisfy({ bytes[at + $0] == $1 }) {
                        found = true
                        break
                    }
                    at += 1
                }
                if found {
                    var number = 0
                    let first = at + key.count
                    var position = first
                    // A number of more digits than an Int holds is no frame's index: it is not
                    // summed (that would trap), only shown as written.
                    while position < lineEnd, bytes[position] >= 0x30, bytes[position] <= 0x39 {
                        if position - first < 18 { number = number * 10 + Int(bytes[position] - 0x30) }
                        position += 1
                    }
                    let digits = position - first
                    if digits > 0 && (digits > 18 || number != index) {
                        let written = String(decoding: bytes[first..<position], as: UTF8.self)
                        return Problem(
                            file: name, line: index + 1,
                            message:
                                "frame_number is \(written), but in a fieldcap session it is "
                                + "the frame's index in \(SessionLayout.videoName(id)) (\(index))"
                        )
                    }
                }
                index += 1
                lineStart = lineEnd + 1
            }
            return nil
        }
    }

    /// `path` from `directory` when it is inside it (as the validator names files), else as it is.
    private static func relative(_ path: String, to directory: String) -> String {
        let base = URL(fileURLWithPath: directory).standardizedFileURL.path
        let file = URL(fileURLWithPath: path).standardizedFileURL.path
        return file.hasPrefix(base + "/") ? String(file.dropFirst(base.count + 1)) : path
    }

    /// The file of the linked path's name in the session directory, else `path` as the manifest
    /// gives it (relative paths from the session directory); nil when neither is a file. The
    /// session's own file comes first: a copied session's manifest still names the original's
    /// absolute path, and the original must not be judged in the copy's place (#42).
    static func resolve(_ path: String, in directory: String) -> String? {
        var candidates: [String] = []
        let name = PathName.base(of: path)
        if path.hasPrefix("/") && !name.isEmpty { candidates.append("\(directory)/\(name)") }
        candidates.append(path.hasPrefix("/") ? path : "\(directory)/\(path)")
        return candidates.first { candidate in
            var info = stat()
            return stat(candidate, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }
}
