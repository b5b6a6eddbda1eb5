import FieldcapCore
import FieldcapFaces
import FieldcapMedia
import FieldcapOutput
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import SyncField

/// `fieldcap extract`: one SyncField session holding exactly the frames and samples whose capture
/// time falls in a wall-clock range, taken from a session or across the segments of a recording.
/// The range is mapped into `CLOCK_MONOTONIC_RAW` through each segment's own sync point; frames are
/// copied into the new videos byte for byte (no re-encoding), lines are copied as written with
/// their `frame_number` counted from 0 again, and the manifest, sync point (the first segment's)
/// and sidecar are written as the recorder writes them. Only finished segments are read.
///
/// With faces to cover, each camera's frames are covered before they are written (the same
/// frames, numbers and times; each frame's boxes in its frame log line, the camera's report in
/// the sidecar): raw frames in place, an MJPEG camera's decoded and written again as JPEG, an
/// FFV1 camera's decoded and coded again as FFV1 (`StoredFrameCover`). A camera coded across
/// frames (H.264, HEVC, FWHT) is refused before anything is written, as is a missing detector;
/// depth cameras (Z16) are copied as recorded.
public enum RangeExtractor {
    public struct Request: Sendable {
        /// A segmented recording, a session, or a root holding the one that covers the range.
        public var source: String
        /// Wall clock, nanoseconds since the epoch; `to` is not included.
        public var fromNs: UInt64
        public var toNs: UInt64
        /// The session directory to create (must not exist).
        public var out: String
        /// Cover the faces in every camera's frames (nil: frames as recorded).
        public var faces: FaceCover.Settings?

        public init(source: String, fromNs: UInt64, toNs: UInt64, out: String, faces: FaceCover.Settings? = nil) {
            self.source = source
            self.fromNs = fromNs
            self.toNs = toNs
            self.out = out
            self.faces = faces
        }

        /// Everything `source` holds: a whole session or recording.
        public static func whole(source: String, out: String, faces: FaceCover.Settings? = nil) -> Request {
            Request(source: source, fromNs: 0, toNs: .max, out: out, faces: faces)
        }
    }

    public struct Outcome {
        public var out: String
        /// The sessions read (segment directories, or the session's), oldest first.
        public var parts: [String]
        /// Records written, per stream id.
        public var records: [(id: String, count: Int)]
        public var report: SessionValidator.Report
    }

    /// Refused or failed: one line saying why. Nothing is left written.
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// One session the range may be read from, with its span in wall clock: parts the range
    /// misses are skipped without opening their files.
    struct Part {
        var name: String
        var directory: String
        var startNs: UInt64
        var endNs: UInt64

        /// Its sidecar: the streams and the sync point.
        func contents() throws -> Sidecar.Contents {
            guard let contents = Sidecar.Contents(layout: SessionLayout(directory: directory)) else {
                throw Failure(message: "\(directory)/\(SessionLayout.sidecarName) cannot be read: nothing written")
            }
            return contents
        }
    }

    public static func extract(_ request: Request, say: (String) -> Void = { _ in }) throws -> Outcome {
        let range =
            "\(SyncPoint.isoDatetime(wallClockNs: request.fromNs)) "
            + "to \(SyncPoint.isoDatetime(wallClockNs: request.toNs))"
        guard request.toNs > request.fromNs else {
            throw Failure(message: "--to must be after --from (\(range)): nothing written")
        }
        let (sourceName, all) = try parts(of: request.source, fromNs: request.fromNs, toNs: request.toNs)
        guard let spanStart = all.map(\.startNs).min(), let spanEnd = all.map(\.endNs).max() else {
            throw Failure(
                message: "\(sourceName) holds no finished session or segment to extract from: nothing written")
        }
        let parts = all.filter { $0.endNs > request.fromNs && $0.startNs < request.toNs }
        let span = "\(SyncPoint.isoDatetime(wallClockNs: spanStart)) to \(SyncPoint.isoDatetime(wallClockNs: spanEnd))"
        guard !parts.isEmpty else {
            throw Failure(message: "\(range) is outside \(sourceName), which spans \(span): nothing written")
        }
        let read = try parts.map { ($0, try $0.contents()) }
        if let faces = request.faces { try checkFacesCanBeCovered(read[0].1.streams, settings: faces) }
        let directory: String
        do {
            directory = try SessionDirectory.create(
                explicit: request.out, root: ".", hostId: read[0].1.syncPoint.hostId, at: Date())
        } catch let error as SessionDirectoryError {
            throw Failure(message: error.message)
        }
        do {
            let outcome = try write(read, request: request, directory: directory, source: sourceName, say: say)
            guard outcome.records.contains(where: { $0.count > 0 }) else {
                throw Failure(
                    message:
                        "no frame or sample of \(sourceName) was captured \(range) (it spans \(span)): nothing written")
            }
            return outcome
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// The finished sessions `source` holds, oldest first, and how to name it in a message.
    static func parts(of source: String, fromNs: UInt64, toNs: UInt64) throws -> (String, [Part]) {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), isDirectory else {
            throw Failure(message: "\(source) is not a directory: give a recording, a session or a root of them")
        }
        if let index = RecordingIndex.read(directory: source) {
            return ("the recording \(source)", try recordingParts(index, directory: source))
        }
        if let part = try sessionPart(directory: source, name: PathName.base(of: source)) {
            return ("the session \(source)", [part])
        }
        if Sidecar.Contents(layout: SessionLayout(directory: source)) != nil {
            throw Failure(
                message: "the session \(source) is not finished (run `fieldcap recover` on it): nothing written")
        }
        let entries = try SessionCatalog.entries(root: source).filter { $0.kind != .foreign }
        guard !entries.isEmpty else {
            throw Failure(
                message:
                    "\(source) holds no fieldcap session or recording (no "
                    + "fieldcap.json or recording.json): nothing written"
            )
        }
        let covering = entries.filter { entry in
            guard let start = entry.startNs else { return false }
            return (entry.endNs ?? .max) > fromNs && start < toNs
        }
        if covering.count > 1 {
            throw Failure(
                message:
                    "\(covering.count) recordings under \(source) cover the range "
                    + "(\(covering.map(\.name).joined(separator: ", "))): give one of them"
            )
        }
        let chosen = covering.first?.path ?? source
        if covering.isEmpty {
            // Nothing covers it: the error names the root's whole span.
            var all: [Part] = []
            for entry in entries { all += (try? parts(of: entry.path, fromNs: fromNs, toNs: toNs).1) ?? [] }
            return ("\(source)", all.sorted { $0.startNs < $1.startNs })
        }
        return try parts(of: chosen, fromNs: fromNs, toNs: toNs)
    }

    /// The finished segments, each spanning (by the index) its start to its last record.
    static func recordingParts(_ index: RecordingIndex, directory: String) throws -> [Part] {
        try index.segments.compactMap { segment in
            guard segment.state == .complete || segment.state == .recovered,
                let start = UTCTime.parse(segment.startUtc)
            else { return nil }
            // Nothing is read through a link: it leads outside the recording (#42).
            guard !PathName.isSymbolicLink("\(directory)/\(segment.directory)") else {
                throw Failure(
                    message:
                        "\(directory)/\(segment.directory) is a symbolic link, not a "
                        + "directory of the recording; validate the recording: nothing written"
                )
            }
            // A late cut leaves records past the scheduled end in this segment: its last one counts.
            let end: UInt64
            if let last = segment.streams?.values.compactMap(\.lastCaptureNs).max() {
                // The index is read from disk: its numbers may be anything, so the sum is checked.
                guard let placed = SpanArithmetic.add(start, last, minus: segment.startMonotonicRawNs) else {
                    throw Failure(
                        message:
                            "\(directory)/\(RecordingIndex.fileName): segment \(segment.directory)'s last_capture_ns "
                            + "\(last) cannot be placed on the wall clock (its start_monotonic_raw_ns is "
                            + "\(segment.startMonotonicRawNs)); validate the recording: nothing written"
                    )
                }
                end = placed
            } else if let scheduled = UTCTime.parse(segment.endUtc) {
                end = scheduled
            } else {
                return nil
            }
            return Part(
                name: segment.directory, directory: "\(directory)/\(segment.directory)", startNs: start,
                endNs: SpanArithmetic.after(end))
        }
    }

    /// A finished session, with its span from its sync point and its streams' first and last lines.
    static func sessionPart(directory: String, name: String) throws -> Part? {
        guard let contents = Sidecar.Contents(layout: SessionLayout(directory: directory)),
            contents.state != "recording"
        else { return nil }
        let layout = SessionLayout(directory: directory)
        var first = UInt64.max
        var last = UInt64.min
        for stream in contents.streams {
            guard let lines = TimestampLines(path: layout.timestamps(stream.id)), !lines.lines.isEmpty else { continue }
            if let ns = lines.captureNs(0) { first = min(first, ns) }
            if let ns = lines.captureNs(lines.lines.count - 1) { last = max(last, ns) }
        }
        guard first <= last else { return nil }
        let sync = contents.syncPoint
        guard let startNs = wall(first, sync), let endNs = wall(last, sync) else {
            let bad = wall(first, sync) == nil ? first : last
            throw Failure(
                message:
                    "\(directory): capture_ns \(bad) is too far from the sync point (monotonic_ns "
                    + "\(sync.monotonicNs)) to be placed on the wall clock; validate \(name): nothing written"
            )
        }
        return Part(name: name, directory: directory, startNs: startNs, endNs: SpanArithmetic.after(endNs))
    }

    /// `rawNs` (`CLOCK_MONOTONIC_RAW`) on the wall clock through the sync point, before the epoch
    /// read as the epoch; nil past what a `UInt64` holds. Both come from disk, so nothing here
    /// may trap: a `capture_ns` of `Int64.max` is a line `validate` passes.
    static func wall(_ rawNs: UInt64, _ sync: SyncPoint) -> UInt64? {
        SpanArithmetic.add(sync.wallClockNs, rawNs, minus: sync.monotonicNs)
    }

    /// `wallNs` on `CLOCK_MONOTONIC_RAW` through the sync point, held to 0...UInt64.max: the
    /// range's ends are only compared with `capture_ns`, so a bound past either end still cuts right.
    static func raw(_ wallNs: UInt64, _ sync: SyncPoint) -> UInt64 {
        let value = Int128(sync.monotonicNs) + Int128(wallNs) - Int128(sync.wallClockNs)
        return UInt64(clamping: value)
    }

    /// One stream of the extract as it is written.
    final class Output {
        let id: String
        let kind: String
        let format: VideoFormat?
        /// What an FFV1 camera captured: what its frames decode to.
        let captured: VideoFormat.PixelFormat?
        let nominalRate: Double
        let videoPath: String
        /// Made at the first part's frames, with what its file was coded with (FFV1's
        /// configuration record, H.264's parameter sets): the same encoder settings throughout.
        var video: MatroskaWriter?
        /// Covers the faces of each frame before it is written (nil: as recorded); it holds
        /// frames back (it looks ahead), which wait here with their time and frame log line.
        var faces: StoredFrameCover?
        var waiting: [(captureNs: UInt64, keyframe: Bool, logLine: [UInt8])] = []
        var timestamps: [UInt8] = []
        var sensor: [UInt8] = []
        var frameLog: [UInt8] = []
        var count = 0
        var firstNs: UInt64?
        var lastNs: UInt64?

        init(_ stream: Sidecar.Contents.Stream, layout: SessionLayout) throws {
            id = stream.id
            kind = stream.kind
            format = stream.format
            captured = stream.capturedPixelFormat
            nominalRate = stream.nominalRate
            videoPath = layout.video(stream.id)
        }

        /// Writes the frames the cover settled, each with the time and frame log line it waited
        /// with, its boxes added to the line.
        func write(settled: [(bytes: [UInt8], covered: [FaceBox])]) throws {
            guard let video else { return }
            for frame in settled {
                let meta = waiting.removeFirst()
                try frame.bytes.withUnsafeBytes {
                    try video.writeFrame($0, captureNs: meta.captureNs, keyframe: meta.keyframe)
                }
                frameLog += meta.logLine
                if !frame.covered.isEmpty && !RangeExtractor.add(frame.covered, toLastLineOf: &frameLog) {
                    throw Failure(
                        message: "\(id): a frame log line does not end as fieldcap writes it; validate the source")
                }
            }
        }

        /// Whether frames of the stream need the ones before them (a hardware encoder's P-frames):
        /// a cut must then start at a keyframe.
        var codesAcrossFrames: Bool {
            guard let format = format?.pixelFormat else { return false }
            return [.h264, .hevc, .fwht].contains(format)
        }

        /// The video file, made on first use with the CodecPrivate of `source` (a part's file; nil
        /// for none: a stream with no frame in the range), or the one its covered frames are
        /// coded with.
        func videoFile(copying source: String?) throws -> MatroskaWriter? {
            if let video { return video }
            guard let format else { return nil }
            let setup =
                if let faces {
                    faces.codecPrivate
                } else if let source, VideoFormat.PixelFormat.storedOnly.contains(format.pixelFormat) {
                    try MatroskaFrames.codecPrivate(in: source)
                } else { [UInt8]() }
            let made = try MatroskaWriter(
                path: videoPath, format: format, nominalRate: nominalRate, codecPrivate: setup, directIO: false)
            video = made
            return made
        }
    }

    static func write(
        _ parts: [(Part, Sidecar.Contents)], request: Request, directory: String, source: String,
        say: (String) -> Void
    ) throws -> Outcome {
        let layout = SessionLayout(directory: directory)
        let first = parts[0].1
        let outputs = try first.streams.map { try Output($0, layout: layout) }
        if let settings = request.faces {
            for output in outputs {
                guard let format = output.format, covered(format, captured: output.captured) else { continue }
                // An FFV1 camera's record to decode with is each part's own (`copy`).
                do throws(FaceCoverError) {
                    output.faces = try StoredFrameCover(
                        stored: format, captured: output.captured,
                        settings: settings.offline(rate: output.nominalRate))
                } catch {
                    throw Failure(message: "--blur-faces: \(output.id): \(error)")
                }
            }
        }
        var used: [String] = []
        var away: [String: [Absence]] = [:]
        for (part, contents) in parts {
            let partLayout = SessionLayout(directory: part.directory)
            let fromRaw = raw(request.fromNs, contents.syncPoint)
            let toRaw = raw(request.toNs, contents.syncPoint)
            absences(in: contents, fromRaw: fromRaw, toRaw: toRaw, into: &away)
            var taken: [String] = []
            for output in outputs {
                guard contents.streams.contains(where: { $0.id == output.id }) else { continue }
                let added = try copy(output, from: partLayout, fromRaw: fromRaw, toRaw: toRaw, part: part.name)
                if added > 0 { taken.append("\(output.id) \(added)") }
            }
            if !taken.isEmpty {
                used.append(part.name)
                say("\(part.name): \(taken.joined(separator: ", "))")
            }
        }
        for output in outputs {
            guard let faces = output.faces else { continue }
            let settled: [(bytes: [UInt8], covered: [FaceBox])]
            do throws(FaceCoverError) { settled = try faces.flush() } catch {
                throw Failure(message: "\(output.id): covering its last frames' faces: \(error)")
            }
            try output.write(settled: settled)
            say("\(output.id): \(faces.report.summary)")
        }
        var counts: [String: Int] = [:]
        var recorded: Set<String> = []
        var links: [String: String] = [:]
        let linkDirectory = URL(fileURLWithPath: directory).path
        for output in outputs {
            try AtomicFile.write(output.timestamps, to: layout.timestamps(output.id))
            counts[output.id] = output.count
            if output.format != nil, let video = try output.video ?? output.videoFile(copying: nil) {
                try video.finish()
                try AtomicFile.write(output.frameLog, to: layout.frameLog(output.id))
                links[output.id] = "\(linkDirectory)/\(SessionLayout.videoName(output.id))"
            } else {
                try AtomicFile.write(output.sensor, to: layout.sensor(output.id))
                recorded.insert(output.id)
            }
        }
        try SessionRecovery.finish(
            directory: directory, syncPoint: first.syncPoint, timestampCounts: counts, recorded: recorded, links: links)
        // The calibration file travels with the values the sidecar keeps of it.
        let calibration = "\(parts[0].0.directory)/\(SessionCalibration.fileName)"
        if let bytes = FileManager.default.contents(atPath: calibration) {
            try AtomicFile.write(Array(bytes), to: "\(directory)/\(SessionCalibration.fileName)")
        }
        try Sidecar.store(
            sidecar(
                first, outputs: outputs, linkDirectory: linkDirectory, request: request, source: source,
                used: used, away: away),
            layout: layout)
        return Outcome(
            out: directory, parts: used, records: outputs.map { ($0.id, $0.count) },
            report: SessionValidator.validateWithVideos(directory: directory))
    }

    /// Appends the part's records of one stream captured in [fromRaw, toRaw); returns how many.
    static func copy(
        _ output: Output, from layout: SessionLayout, fromRaw: UInt64, toRaw: UInt64, part: String
    ) throws
        -> Int
    {
        guard let stamps = TimestampLines(path: layout.timestamps(output.id)) else {
            if AbsentStream.recordedNothing(directory: layout.directory, id: output.id) { return 0 }
            throw Failure(message: "\(layout.timestamps(output.id)): cannot be read")
        }
        // Lines lost (an emptied or cut file) would otherwise extract as a valid, shorter stream.
        if let counted = manifestFrameCount(layout, id: output.id), counted != stamps.lines.count {
            throw Failure(
                message:
                    "\(layout.timestamps(output.id)) holds \(stamps.lines.count) "
                    + "lines, but manifest.json counts \(counted); validate \(part)"
            )
        }
        // capture_ns never decreases within a stream: the lines in range are one run of them.
        var lower = stamps.lines.count
        var upper = stamps.lines.count
        for line in stamps.lines.indices {
            guard let ns = stamps.captureNs(line) else {
                throw Failure(message: "\(layout.timestamps(output.id)):\(line + 1): no capture_ns; validate \(part)")
            }
            if ns >= fromRaw && lower == stamps.lines.count { lower = line }
            if ns >= toRaw {
                upper = line
                break
            }
        }
        guard lower < upper else { return 0 }
        // A stream coded across frames starts at the keyframe at or before the range (at most a
        // GOP early, a second as fieldcap sets encoders up), so that its first frame decodes.
        if output.codesAcrossFrames && output.count == 0 && lower > 0 {
            var index = 0
            var keyframe = 0
            try MatroskaFrames.forEachFrame(in: layout.video(output.id)) { frame in
                defer { index += 1 }
                guard index <= lower else { return false }
                if frame.isKeyframe { keyframe = index }
                return true
            }
            lower = keyframe
        }
        let base = output.count
        for line in lower..<upper { stamps.renumbered(line, to: base + line - lower, into: &output.timestamps) }
        output.firstNs = output.firstNs ?? stamps.captureNs(lower)
        output.lastNs = stamps.captureNs(upper - 1)
        if let video = try output.videoFile(copying: layout.video(output.id)) {
            guard let log = TimestampLines(path: layout.frameLog(output.id)), log.lines.count >= upper else {
                throw Failure(message: "\(layout.frameLog(output.id)): fewer lines than frames; validate \(part)")
            }
            if output.faces == nil {
                for line in lower..<upper { log.renumbered(line, to: base + line - lower, into: &output.frameLog) }
            }
            if let faces = output.faces, output.format?.pixelFormat == .ffv1 {
                // Each part's file has its own record; its frames decode with it.
                let record = try MatroskaFrames.codecPrivate(in: layout.video(output.id))
                do throws(FaceCoverError) { try faces.decode(with: record) } catch {
                    throw Failure(message: "\(layout.video(output.id)): \(error); validate \(part)")
                }
            }
            var frame = 0
            var failure: Error?
            try MatroskaFrames.forEachFrame(in: layout.video(output.id)) { read in
                defer { frame += 1 }
                guard frame >= lower else { return true }
                guard frame < upper, let ns = stamps.captureNs(frame) else { return false }
                do {
                    if let faces = output.faces {
                        var line: [UInt8] = []
                        log.renumbered(frame, to: base + frame - lower, into: &line)
                        output.waiting.append((ns, read.isKeyframe, line))
                        let settled: [(bytes: [UInt8], covered: [FaceBox])]
                        do throws(FaceCoverError) { settled = try faces.push(Array(read.bytes)) } catch {
                            throw Failure(
                                message: error.damagedFrame
                                    ? "\(output.id) frame \(frame) of \(part) does not decode (\(error)); validate \(part)"
                                    : "\(output.id) frame \(frame) of \(part): covering its faces: \(error)")
                        }
                        try output.write(settled: settled)
                    } else {
                        try video.writeFrame(read.bytes, captureNs: ns, keyframe: read.isKeyframe)
                    }
                } catch {
                    failure = error
                    return false
                }
                return true
            }
            if let failure { throw failure }
            guard frame >= upper else {
                throw Failure(
                    message:
                        "\(layout.video(output.id)): holds \(frame) frames, "
                        + "fewer than its timestamp lines; validate \(part)"
                )
            }
        } else {
            guard let sensor = TimestampLines(path: layout.sensor(output.id)), sensor.lines.count >= upper else {
                throw Failure(
                    message: "\(layout.sensor(output.id)): fewer lines than timestamp lines; validate \(part)")
            }
            for line in lower..<upper { sensor.renumbered(line, to: base + line - lower, into: &output.sensor) }
        }
        output.count += upper - lower
        return upper - lower
    }

    /// Whether the faces of a camera stored as `format` are covered; false for one copied as
    /// recorded (depth, Z16 as captured).
    static func covered(_ format: VideoFormat, captured: VideoFormat.PixelFormat?) -> Bool {
        format.pixelFormat != .z16 && !(format.pixelFormat == .ffv1 && captured == .z16)
    }

    /// Refused as `extract` covering faces would refuse `source` (a camera whose faces cannot be
    /// covered, no detector), before anything is written: `upload` checks every session first.
    public static func checkFaces(source: String, settings: FaceCover.Settings) throws {
        let (_, all) = try parts(of: source, fromNs: 0, toNs: .max)
        guard let first = all.first else { return }
        try checkFacesCanBeCovered(try first.contents().streams, settings: settings)
    }

    /// Every camera can have its faces covered and the detector loads: refused before anything is
    /// written.
    static func checkFacesCanBeCovered(_ streams: [Sidecar.Contents.Stream], settings: FaceCover.Settings) throws {
        for stream in streams {
            guard let format = stream.format, covered(format, captured: stream.capturedPixelFormat) else { continue }
            if case .failure(let problem) = StoredFrameCover.layout(
                stored: format, captured: stream.capturedPixelFormat)
            {
                throw Failure(
                    message:
                        "--blur-faces: \(stream.id) is \(format): \(problem): nothing written")
            }
        }
        do throws(FaceCoverError) { _ = try MTCNNFaceDetector(minFace: settings.minFace) } catch {
            throw Failure(message: "--blur-faces: \(error): nothing written")
        }
    }

    /// `"faces_covered":[[x,y,w,h],...]` added to the frame log line just written, in place of
    /// one it had (a covered extract extracted again, covered again); false for a line that does
    /// not end as fieldcap writes it (`}`), which takes none.
    static func add(_ boxes: [FaceBox], toLastLineOf log: inout [UInt8]) -> Bool {
        guard log.count >= 2, log[log.count - 1] == UInt8(ascii: "\n"), log[log.count - 2] == UInt8(ascii: "}")
        else { return false }
        log.removeLast(2)
        // The key fieldcap writes last, so an earlier cover's boxes end the line.
        let key = Array(#","faces_covered":["#.utf8)
        let lineStart = (log.lastIndex(of: UInt8(ascii: "\n")) ?? -1) + 1
        if let found = TimestampLines.lastRange(of: key, in: log[lineStart...]), log.last == UInt8(ascii: "]") {
            log.removeSubrange(found.lowerBound...)
        }
        log += Array((#","faces_covered":["# + boxes.map(\.pixelsJSON).joined(separator: ",") + "]}\n").utf8)
        return true
    }

    /// The manifest's `frame_count` of stream `id`, if the manifest says.
    static func manifestFrameCount(_ layout: SessionLayout, id: String) -> Int? {
        guard let data = FileManager.default.contents(atPath: layout.manifest),
            let count = JSONValue.parse(data)?["streams"]?[id]?["frame_count"]?.integerValue
        else { return nil }
        return Int(exactly: count)
    }

    /// `fieldcap.json` of the extract: the streams as the recording described them, what each
    /// holds now, and where it came from.
    /// The times each stream's device was away that reach into `[fromRaw, toRaw]`, as the
    /// sessions' sidecars tell them, merged by when they began (a time away over a segment
    /// boundary is in both segments; the later one may know its return).
    static func absences(
        in contents: Sidecar.Contents, fromRaw: UInt64, toRaw: UInt64, into away: inout [String: [Absence]]
    ) {
        for stream in contents.document["streams"]?.arrayValue ?? [] {
            guard let id = stream["id"]?.stringValue else { continue }
            for entry in stream["away"]?.arrayValue ?? [] {
                guard let left = entry["left_at"]?["monotonic_raw_ns"]?.uint64Value else { continue }
                var absence = Absence(
                    leftNs: left, reason: entry["reason"]?.stringValue ?? "",
                    returnedNs: entry["returned_at"]?["monotonic_raw_ns"]?.uint64Value,
                    returnedAs: entry["returned_as"]?.stringValue)
                guard absence.overlaps(startNs: fromRaw, endNs: toRaw) else { continue }
                if let known = away[id]?.firstIndex(where: { $0.leftNs == left }) {
                    absence.returnedNs = absence.returnedNs ?? away[id]![known].returnedNs
                    absence.returnedAs = absence.returnedAs ?? away[id]![known].returnedAs
                    away[id]![known] = absence
                } else {
                    away[id, default: []].append(absence)
                }
            }
        }
    }

    static func sidecar(
        _ first: Sidecar.Contents, outputs: [Output], linkDirectory: String, request: Request, source: String,
        used: [String], away: [String: [Absence]] = [:]
    ) -> [String: JSONValue] {
        let entries = first.document["streams"]?.arrayValue(of: \.objectValue) ?? []
        let kept = [
            "id", "kind", "device", "nominal_rate", "format", "encoding", "video_path", "frames_path", "channels",
            "calibration",
        ]
        let streams: [JSONValue] = outputs.map { output in
            var entry = entries.first { $0["id"]?.stringValue == output.id }?.filter { kept.contains($0.key) } ?? [:]
            entry["id"] = .string(output.id)
            entry["kind"] = .string(output.kind)
            entry["written"] = JSONValue(output.count)
            if output.format != nil {
                entry["linked_path"] = .string("\(linkDirectory)/\(SessionLayout.videoName(output.id))")
            }
            if let report = output.faces?.report { entry["faces_covered"] = JSONValue.parse(report.json.utf8) ?? .null }
            // The times away within the extract, each for its part of it: its holes stay explained.
            if let absences = away[output.id], !absences.isEmpty {
                // To the extract's last record: an open request range would count a device still
                // away to the end of time.
                let fromRaw = raw(request.fromNs, first.syncPoint)
                let lastRecord = outputs.compactMap(\.lastNs).max() ?? fromRaw
                let toRaw = min(raw(request.toNs, first.syncPoint), max(lastRecord, fromRaw))
                let rate = entry["nominal_rate"]?.doubleValue ?? 0
                entry["away"] = .array(
                    absences.sorted { $0.leftNs < $1.leftNs }.map { absence in
                        func instant(_ ns: UInt64) -> JSONValue {
                            [
                                "monotonic_raw_ns": JSONValue(ns),
                                "seconds_after_start": .double(
                                    Double(Int64(bitPattern: ns &- first.syncPoint.monotonicNs)) / 1e9),
                            ]
                        }
                        let returned = absence.returnedNs.flatMap { $0 <= toRaw ? $0 : nil }
                        var item: [String: JSONValue] = [
                            "left_at": instant(absence.leftNs), "reason": .string(absence.reason),
                            "returned_at": returned.map(instant) ?? .null,
                            "seconds": .double(Double(absence.nanoseconds(fromNs: fromRaw, untilNs: toRaw)) / 1e9),
                            "records_at_nominal_rate": JSONValue(
                                absence.recordsWorth(rate: rate, fromNs: fromRaw, untilNs: toRaw)),
                        ]
                        if returned != nil, let node = absence.returnedAs { item["returned_as"] = .string(node) }
                        return .object(item)
                    })
            }
            return .object(entry)
        }
        let sync = first.syncPoint
        let firstNs = outputs.compactMap(\.firstNs).min()
        let lastNs = outputs.compactMap(\.lastNs).max()
        var document: [String: JSONValue] = [
            "fieldcap_version": .string(Sidecar.fieldcapVersion), "host_id": .string(sync.hostId), "state": "complete",
            "stop_reason": "extract",
            "sync_point": ["monotonic_ns": JSONValue(sync.monotonicNs), "wall_clock_ns": JSONValue(sync.wallClockNs)],
            "streams": .array(streams),
            "extract": [
                "source": .string(source), "from_utc": .string(SyncPoint.isoDatetime(wallClockNs: request.fromNs)),
                "to_utc": .string(SyncPoint.isoDatetime(wallClockNs: request.toNs)),
                "sessions": .array(used.map(JSONValue.string)), "extracted_utc": .string(Sidecar.utc(Date())),
            ],
        ]
        if let calibration = first.document["calibration_file"] { document["calibration_file"] = calibration }
        if let firstNs, let ns = wall(firstNs, sync) {
            document["started_utc"] = .string(SyncPoint.isoDatetime(wallClockNs: ns))
        }
        if let lastNs, let ns = wall(lastNs, sync) {
            document["stopped_utc"] = .string(SyncPoint.isoDatetime(wallClockNs: ns))
        }
        return document
    }
}
