import FieldcapCore
import FoundationEssentials
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// How `fieldcap recover` brings a camera's video and its timestamp lines into agreement after a
/// crash or a power cut, so that the video holds exactly one frame per line and `frame_number` is
/// the frame's index.
///
/// The three files reach the disk on different schedules: a frame's bytes at once (direct I/O)
/// and its headers at the recorder's sync, the frame log right before that sync, the timestamp
/// lines at the SyncField writer's own sync. After a power cut the video can hold frames whose
/// timestamp lines were still in the page cache.
///
/// Those lines are restored, not guessed: a frame's line is written back only from its line in
/// the frame log, which holds the very values the recorder stamped (`capture_ns`,
/// `uncertainty_ns`, `frame_number`), and only when that `capture_ns` gives the time the video
/// holds for the frame (the writer's 1 ms ticks from the first frame, recomputed as it computes
/// them). A frame without such a line is cut from the video: its block time alone fixes its
/// capture time only to ±0.5 ms around the first frame's, while the lost line said it to a
/// microsecond, and a line carrying the first kind of value among lines of the second would pass
/// for one of them.
public enum CameraRecovery {
    struct Plan: Equatable {
        /// The frames the video and the timestamp lines keep.
        var frames: Int
        /// The lines to append after the timestamps file's whole lines (frames
        /// `stampedLines..<frames`).
        var restored: [SessionRecovery.TimestampLine]
    }

    /// How it is done, for fieldcap.json's `recovery` notes.
    public static let method =
        "each video keeps the frames that have a timestamp line: lines a crash lost are written back "
        + "from the frame log ({id}.frames.ndjson), which holds the values the recorder stamped, each "
        + "only where its capture_ns gives the frame's time in the video (timestamp_lines_restored); "
        + "a frame with no such line is cut from the video (frames_cut), since its time in the video "
        + "(1 ms ticks from the first frame) would give capture_ns only to about 0.5 ms"

    /// A frame log line's values that a timestamp line holds.
    struct LoggedFrame: Equatable {
        var frameNumber: Int
        var captureNs: UInt64
        /// nil in frame logs written before fieldcap kept it there.
        var uncertaintyNs: UInt64?
    }

    /// Decides what to keep.
    ///
    /// - Parameters:
    ///   - videoTimesNs: the time of each whole frame in the video, in file order.
    ///   - stampedLines: whole timestamp lines in the file.
    ///   - firstCaptureNs, lastCaptureNs: `capture_ns` of its first and last line.
    ///   - logged: the frame log's line for a frame index, if it has a readable one.
    static func plan(
        videoTimesNs: [UInt64], stampedLines: Int, firstCaptureNs: UInt64?, lastCaptureNs: UInt64?,
        logged: (Int) -> LoggedFrame?
    ) -> Plan {
        guard stampedLines < videoTimesNs.count else { return Plan(frames: videoTimesNs.count, restored: []) }
        let anchor = stampedLines > 0 ? firstCaptureNs : logged(0).flatMap { $0.frameNumber == 0 ? $0.captureNs : nil }
        guard let anchor else { return Plan(frames: stampedLines, restored: []) }
        var previous = stampedLines > 0 ? lastCaptureNs : nil
        var restored: [SessionRecovery.TimestampLine] = []
        for index in stampedLines..<videoTimesNs.count {
            guard let frame = logged(index), frame.frameNumber == index, let uncertainty = frame.uncertaintyNs else {
                break
            }
            if let previous, frame.captureNs < previous { break }
            guard
                videoTimeNs(
                    index: index, captureNs: frame.captureNs, firstCaptureNs: anchor, videoTimesNs: videoTimesNs)
                    == videoTimesNs[index]
            else { break }
            restored.append(.init(captureNs: frame.captureNs, frameNumber: index, uncertaintyNs: uncertainty))
            previous = frame.captureNs
        }
        return Plan(frames: stampedLines + restored.count, restored: restored)
    }

    /// The time `MatroskaWriter` gives frame `index` captured at `captureNs`: its distance from the
    /// first frame in whole ticks, rounded, and at least a tick after the frame before it.
    static func videoTimeNs(index: Int, captureNs: UInt64, firstCaptureNs: UInt64, videoTimesNs: [UInt64]) -> UInt64 {
        let tickNs = MatroskaWriter.nanosecondsPerTick
        let sinceFirst = captureNs >= firstCaptureNs ? captureNs - firstCaptureNs : 0
        var tick = (sinceFirst + tickNs / 2) / tickNs
        if index > 0 { tick = max(tick, videoTimesNs[index - 1] / tickNs + 1) }
        return tick * tickNs
    }

    // MARK: - Reading the files

    /// The byte ranges of a file's lines (without their newlines), for the few it reads.
    struct Lines {
        let data: Data
        let ranges: [Range<Int>]

        init(path: String) {
            data = (try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)) ?? Data()
            var ranges: [Range<Int>] = []
            var start = data.startIndex
            while let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
                ranges.append(start..<end)
                start = end + 1
            }
            self.ranges = ranges
        }

        var count: Int { ranges.count }

        func parsed(_ index: Int) -> JSONValue? {
            guard ranges.indices.contains(index) else { return nil }
            return JSONValue.parse(data[ranges[index]])
        }
    }

    /// A frame log line's values, if it has them with the right types.
    static func loggedFrame(_ line: JSONValue?) -> LoggedFrame? {
        guard let line, let frameNumber = line["frame_number"]?.integerValue,
            let capture = line["capture_ns"]?.unsignedValue
        else { return nil }
        let uncertainty = line["uncertainty_ns"].flatMap { $0.unsignedValue }
        if line["uncertainty_ns"] != nil && uncertainty == nil { return nil }
        return LoggedFrame(frameNumber: Int(frameNumber), captureNs: capture, uncertaintyNs: uncertainty)
    }
}

extension CameraRecovery {
    /// Why a session was left as it was: recover cuts only what a killed recorder can have left
    /// unfinished, never what it cannot account for, and writes through no link (#42).
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public var path: String
        public var reason: String

        public init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }

        public var description: String {
            "\(path): \(reason); left as it was, with every other file of the session (nothing recovered)"
        }
    }

    /// Unaccounted bytes a recorder killed or cut off can leave after its last whole frame: the
    /// frames of two sync intervals (a second each) whose headers had not reached the disk, each
    /// with its Cluster's headers and alignment (8 KiB at most), and 64 KiB of slack.
    static func tailAllowance(format: VideoFormat, nominalRate: Double, largestFrame: UInt64) -> UInt64 {
        let frame = format.pixelFormat.frameBytes(width: format.width, height: format.height).map(UInt64.init)
        // The rate and the largest frame come from the session's files: clamped, so a damaged
        // or hostile sidecar cannot trap the arithmetic (the allowance saturates instead).
        let rate = nominalRate.isFinite ? min(max(nominalRate, 0), 1_000_000) : 1_000_000
        let frames = UInt64(max(2, (2 * rate).rounded(.up)))
        let perFrame = max(frame ?? 0, largestFrame).addingReportingOverflow(8 << 10)
        let all = perFrame.partialValue.multipliedReportingOverflow(by: frames)
        if perFrame.overflow || all.overflow { return .max }
        return all.partialValue.addingReportingOverflow(64 << 10).overflow ? .max : all.partialValue + (64 << 10)
    }

    /// `recover` asks this of every camera before it changes any file of the session.
    ///
    /// Throws `Refusal` when the video cannot be recovered without losing what it holds: it is
    /// not Matroska with a video track (a damaged header), or its readable frames end long
    /// before the file does (damage in the middle, not a tail cut short). Returns the scan, or
    /// nil for a video that is missing or empty while there is no timestamp line to lose.
    public static func refuseDamage(_ files: Files, format: VideoFormat, nominalRate: Double) throws -> MatroskaScan? {
        let scan: MatroskaScan
        do throws(MediaError) {
            scan = try MatroskaScan(path: files.video)
        } catch {
            guard error.code == ENOENT else { throw Refusal(path: files.video, reason: "cannot be read (\(error))") }
            if Lines(path: files.timestamps).count == 0 { return nil }
            throw Refusal(path: files.video, reason: "is missing while its timestamps file has lines")
        }
        if scan.fileSize == 0 && Lines(path: files.timestamps).count == 0 { return nil }
        guard scan.isMatroska, scan.hasVideoTrack else {
            throw Refusal(
                path: files.video,
                reason: scan.isMatroska
                    ? "its Tracks cannot be read (no video track)"
                    : "is not a readable Matroska file (its EBML header is damaged or it is another format)")
        }
        let largest = scan.frames.map(\.size).max() ?? 0
        let unread = scan.fileSize - min(scan.fileSize, scan.framesEnd)
        if unread > tailAllowance(format: format, nominalRate: nominalRate, largestFrame: largest) {
            throw Refusal(
                path: files.video,
                reason:
                    "\(unread) bytes after its \(scan.frames.count) readable frames "
                    + "cannot be read as frames (damage, not a recording cut short)"
            )
        }
        return scan
    }

    /// A camera stream's three files.
    public struct Files: Sendable {
        public var video: String
        public var timestamps: String
        public var frameLog: String

        public init(video: String, timestamps: String, frameLog: String) {
            self.video = video
            self.timestamps = timestamps
            self.frameLog = frameLog
        }
    }

    /// What recovering one camera stream did.
    public struct Outcome: Equatable, Sendable {
        /// Frames in the video and timestamp lines now.
        public var frames: Int
        /// Whole frames the video held before.
        public var framesBefore: Int
        /// Timestamp lines written back from the frame log.
        public var restoredLines: Int
        /// Bytes cut from the end of the timestamps file and of the frame log.
        public var timestampsCutBytes: Int
        public var frameLogCutBytes: Int

        /// Frames cut from the video because no timestamp line could be kept or restored for them.
        public var framesCut: Int { framesBefore - frames }
    }

    /// Brings a camera's video, timestamp lines and frame log into agreement.
    ///
    /// The video is made a finished file of the frames kept in place (`finishInPlace`): no copy,
    /// however long it is. One in another layout is rewritten when `rewriteVideo` allows (not on
    /// a disk too full for a copy).
    public static func recover(
        _ files: Files, format: VideoFormat, nominalRate: Double, hostId: String, rewriteVideo: Bool
    ) throws -> Outcome {
        let video = files.video, stampsPath = files.timestamps, logPath = files.frameLog
        // Before anything changes: a video recover cannot read is left as it is, with its lines.
        let scan = try refuseDamage(files, format: format, nominalRate: nominalRate)
        if scan == nil {
            // Killed before the recorder made the video (it makes the sidecar first, and an
            // encoder's file can wait for its first frame), or while it wrote the header: no
            // frame and no line to lose. The stream ends as a clean stop before its first frame
            // leaves it, an empty video with its track, so that the session validates.
            try MatroskaWriter(path: video, format: format, nominalRate: nominalRate, directIO: false).finish()
        }
        // Lines a cut left half-written or unreadable go first; then the files say what survived.
        let stampsTrim = try SessionRecovery.trimJSONLines(path: stampsPath)
        let logTrim = try SessionRecovery.trimJSONLines(path: logPath)
        let stamps = Lines(path: stampsPath)
        let log = Lines(path: logPath)
        let scanned = scan?.frames ?? []
        let times = scanned.prefix { MatroskaSalvage.mayBeWhole(size: $0.size, format: format) }.map(\.timeNs)
        let plan = plan(
            videoTimesNs: times, stampedLines: stamps.count,
            firstCaptureNs: stamps.parsed(0)?["capture_ns"]?.unsignedValue,
            lastCaptureNs: stamps.parsed(stamps.count - 1)?["capture_ns"]?.unsignedValue,
            logged: { loggedFrame(log.parsed($0)) })

        // Whole frames: a raw frame has its format's size, a compressed one needs its file read.
        let whole =
            format.pixelFormat.frameBytes(width: format.width, height: format.height) == nil
            ? min(times.count, MatroskaSalvage.countFrames(path: video, format: format)) : times.count
        var frames = min(plan.frames, whole)
        var framesBefore = whole
        if try !MatroskaSalvage.finishInPlace(path: video, keeping: frames, nominalRate: nominalRate) {
            if rewriteVideo {
                let written = try MatroskaSalvage.salvage(
                    path: video, format: format, nominalRate: nominalRate, limit: frames)
                framesBefore = written < frames ? written : whole
                frames = written
            } else {
                // Another writer's layout, and no room for a copy: the video stays as it is
                // (validate says so if it holds more frames than lines).
                framesBefore = frames
            }
        }

        var timestampsCut = stampsTrim.cutBytes
        let restored = plan.restored.prefix(max(0, frames - stamps.count))
        if stamps.count > frames {
            timestampsCut += try SessionRecovery.trimJSONLines(path: stampsPath, limit: frames).cutBytes
        } else {
            try SessionRecovery.appendTimestampLines(Array(restored), to: stampsPath, hostId: hostId)
        }
        let logCut = try SessionRecovery.trimJSONLines(path: logPath, limit: frames).cutBytes
        return Outcome(
            frames: frames, framesBefore: framesBefore, restoredLines: restored.count,
            timestampsCutBytes: timestampsCut,
            frameLogCutBytes: logTrim.cutBytes + logCut)
    }
}
