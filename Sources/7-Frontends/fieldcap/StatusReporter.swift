import FieldcapCore
import FieldcapSession
import Glibc
import SyncField

/// The live status line on a terminal, the JSON progress lines for rigs, and the summary.
///
/// Beside each stream's rate and drops (records fieldcap had no room for) it shows the records
/// the device itself skipped (`gap`: a camera skips frames while fieldcap holds all its buffers,
/// as on a disk slower than the video), and a stalled disk: files whose write or sync has taken
/// a second or more, from the session's `DiskWatch`.
final class StatusReporter {
    let directory: String
    let sources: [CaptureSource]
    let quiet: Bool
    let json: Bool
    let diskWatch: DiskStalls?
    /// Each source's report as setup left it, for the start lines. Taken when the reporter is
    /// made, which must be before capture starts: a report also reads counters its capture
    /// thread owns (fallbacks, gaps, the clock mapping), safe to read only once it has ended.
    let startReports: [SourceReport]
    /// How each camera's frames are stored (`encode=`), by stream id.
    let encodings: [String: VideoEncoding]
    /// Encoding threads of the cameras with more than one.
    let encoderThreads: [String: Int]
    private let line = TerminalLine()

    init(
        directory: String, sources: [CaptureSource], quiet: Bool, json: Bool, diskWatch: DiskStalls? = nil,
        encodings: [String: VideoEncoding] = [:], encoderThreads: [String: Int] = [:]
    ) {
        self.encodings = encodings
        self.encoderThreads = encoderThreads
        self.directory = directory
        self.sources = sources
        self.quiet = quiet
        self.json = json
        self.diskWatch = diskWatch
        startReports = sources.map(\.report)
    }

    /// What each stream was granted, as recording starts: on a terminal (stderr) one line per
    /// stream, as ffmpeg lists its input streams; with `--json` the first line on stdout,
    /// `{"event":"start",...}`, with each source's report.
    func printStart() {
        if json {
            writeLine(startLine)
        } else if !quiet {
            writeStandardError(header)
        }
    }

    /// How the videos go to the disk (direct I/O or the page cache, and why), shown under the
    /// streams: the first line stays `recording N streams into DIR`.
    var writePathLine: String?

    /// `recording 2 streams into DIR`, then `  cam0  /dev/video0  <what it was granted>` per
    /// stream (ids and devices in columns), then how the videos are written, then `  Ctrl-C stops`.
    var header: String {
        let ids = sources.map(\.descriptor.id), devices = sources.map(\.descriptor.device)
        let idWidth = ids.map(\.count).max() ?? 0, deviceWidth = devices.map(\.count).max() ?? 0
        var text = "recording \(sources.count) stream\(sources.count == 1 ? "" : "s") into \(directory)\n"
        for index in sources.indices {
            text +=
                "  " + ids[index] + String(repeating: " ", count: idWidth - ids[index].count)
                + "  " + devices[index] + String(repeating: " ", count: deviceWidth - devices[index].count)
                + "  " + startReports[index].summary + (storage(of: sources[index]).map { ", \($0)" } ?? "") + "\n"
        }
        if let writePathLine { text += "  \(writePathLine)\n" }
        return text + "  Ctrl-C stops\n"
    }

    /// `stored as JPEG q85 (libjpeg-turbo, on a thread of its own)` for an encoded camera, else nil.
    func storage(of source: CaptureSource) -> String? {
        guard let format = source.descriptor.videoFormat, let encoding = encodings[source.descriptor.id],
            encoding.encodes(format)
        else { return nil }
        let threads =
            encoderThreads[source.descriptor.id].map { "on \($0) threads of its own" } ?? "on a thread of its own"
        switch encoding {
        case .raw: return nil
        case .jpeg(let quality): return "stored as JPEG q\(quality) (libjpeg-turbo, \(threads))"
        case .ffv1: return "stored as lossless FFV1 (libavcodec, \(threads))"
        case .hardware(let hardware):
            let rate = hardware.bitrate.map { " at \($0 / 1000) kbit/s" } ?? ""
            return
                "stored as \(hardware.codec.fourcc)\(rate) (V4L2 encoder "
                + "\(hardware.device ?? "found at start"), on a thread of its own)"
        }
    }

    /// `{"event":"start","directory":...,"streams":[{"id","kind","device","granted","summary","time_source",
    /// "encoding"}]}`; `encoding` (`jpeg:85`) only for an encoded camera.
    var startLine: [String: JSONValue] {
        let streams: [JSONValue] = zip(sources, startReports).map { source, report in
            var entry: [String: JSONValue] = [
                "id": .string(source.descriptor.id), "kind": .string(source.descriptor.kind.rawValue),
                "device": .string(source.descriptor.device), "granted": report.granted,
                "summary": .string(report.summary), "time_source": .string(report.timeSource),
            ]
            if storage(of: source) != nil {
                entry["encoding"] = encodings[source.descriptor.id].map { .string($0.description) }
            }
            return .object(entry)
        }
        return ["event": "start", "directory": .string(directory), "streams": .array(streams)]
    }

    /// One JSON object and a newline on stdout.
    private func writeLine(_ object: [String: JSONValue]) {
        if let line = JSONValue.object(object).compactText(escapingSlashes: false) {
            writeStandardOutput(Array((line + "\n").utf8))
        }
    }

    /// A status sample (`RecordingRunner`'s, every half second): the status line redrawn, or a
    /// progress line with `--json`.
    func report(_ status: RecordingStatus) {
        let elapsed = status.elapsed
        if json {
            writeLine(Self.progressLine(status))
            return
        }
        guard !quiet, line.isTerminal else { return }
        let parts = status.streams.map { stream in
            stream.id + cFormat(" %.1f/s drop %ld", stream.rate, stream.dropped)
                + (stream.encoderDropped > 0 ? " (encoder \(stream.encoderDropped))" : "")
                + ((stream.deviceGaps ?? 0) > 0 ? " gap \(stream.deviceGaps!)" : "")
                + (stream.away == true ? " AWAY" : "")
        }
        let disk = status.diskFree.map { cFormat("  free %.1f GB", Double($0) / 1e9) } ?? ""
        line.draw(
            cFormat("%6.1fs  ", elapsed) + parts.joined(separator: " | ")
                + cFormat("  %.1f MB", Double(status.bytes) / 1e6) + disk + Self.describe(status.stalls))
    }

    /// `{"event":"progress","elapsed_s":...,"streams":[{"id","written","dropped","encoder_dropped",
    /// "queued","rate","device_gaps"}],"bytes":...,"disk_free_bytes":...,"disk_stalls":[...]}`;
    /// `dropped` counts every drop, `encoder_dropped` those of an encoder behind.
    static func progressLine(_ status: RecordingStatus) -> [String: JSONValue] {
        let streams: [JSONValue] = status.streams.map { stream in
            var entry: [String: JSONValue] = [
                "id": .string(stream.id), "written": JSONValue(stream.written), "dropped": JSONValue(stream.dropped),
                "encoder_dropped": JSONValue(stream.encoderDropped), "queued": JSONValue(stream.queued),
                "rate": .double(stream.rate),
            ]
            if let gap = stream.deviceGaps { entry["device_gaps"] = JSONValue(gap) }
            if let away = stream.away { entry["away"] = .bool(away) }
            if let times = stream.timesAway { entry["times_away"] = JSONValue(times) }
            return .object(entry)
        }
        var line: [String: JSONValue] = [
            "event": "progress", "elapsed_s": .double(status.elapsed), "streams": .array(streams),
            "bytes": JSONValue(status.bytes),
        ]
        if let free = status.diskFree { line["disk_free_bytes"] = JSONValue(free) }
        line["disk_stalls"] = .array(
            status.stalls.map {
                [
                    "file": .string($0.file), "operation": .string($0.operation.rawValue),
                    "seconds": .double($0.seconds), "ongoing": .bool($0.ongoing),
                ]
            })
        return line
    }

    /// "  DISK STALLED: cam0.mkv write 3.0 s, imu.jsonl sync 2.1 s so far", or nothing.
    static func describe(_ stalls: [DiskWatch.Stall]) -> String {
        guard !stalls.isEmpty else { return "" }
        return "  DISK STALLED: "
            + stalls.map {
                "\($0.file) \($0.operation.rawValue) " + cFormat("%.1f s", $0.seconds) + ($0.ongoing ? " so far" : "")
            }.joined(separator: ", ")
    }

    func finishLine() { line.keep() }

    /// What the user should know about each stream at the end: what its source reported (frames
    /// stamped at dequeue, kernel sequence gaps, timeline gaps...) and a rate far from its
    /// nominal one (`RateWarning`). Read once capture has ended.
    func warnings(_ summary: [Recorder.StreamSummary], elapsed: Double) -> [[String]] {
        zip(sources, summary).map { source, stream in
            let rate = RateWarning.warning(
                kind: source.descriptor.kind, nominal: source.descriptor.nominalRate, written: stream.written,
                dropped: stream.dropped + stream.encoderDropped, deviceGaps: source.deviceGaps?.count,
                capturedSpanNs: stream.capturedSpanNs,
                // A stream whose device was away has its rate lowered by the time away, which its
                // source's own warning names: not by the camera's exposure or the disk.
                elapsed: elapsed, endedEarly: stream.captureError != nil || !stream.absences.isEmpty)
            return source.report.warnings + (rate.map { [$0] } ?? [])
        }
    }

    /// The summary on stderr (unless `--quiet`) with a `warning:` line per stream warning, and
    /// with `--json` a last line on stdout, `{"event":"stop",...}`, that says the same.
    func printSummary(_ summary: [Recorder.StreamSummary], elapsed: Double, reason: String) {
        let warnings = warnings(summary, elapsed: elapsed)
        if json { writeLine(stopLine(summary, warnings: warnings, elapsed: elapsed, reason: reason)) }
        if !quiet {
            writeStandardError(summaryText(summary, warnings: warnings, elapsed: elapsed, reason: reason))
        }
    }

    /// `recorded 6.0 s (stopped by duration) into DIR`, a line per stream with its counts, the
    /// disk's stalls, `warning: ID: ...` per warning, and how to check the session.
    func summaryText(
        _ summary: [Recorder.StreamSummary], warnings: [[String]], elapsed: Double, reason: String
    ) -> String {
        var text = cFormat("recorded %.1f s", elapsed) + " (stopped by \(reason)) into \(directory)\n"
        for (index, stream) in summary.enumerated() {
            text +=
                "  \(stream.id): \(stream.written) written ("
                + cFormat("%.1f/s", Double(stream.written) / max(elapsed, 0.001)) + "), \(stream.dropped) dropped"
            if let range = stream.droppedRange { text += " (records \(range.lowerBound)...\(range.upperBound))" }
            if stream.encoderDropped > 0 && sources[index].descriptor.kind == .feed {
                text +=
                    ", \(stream.encoderDropped) dropped while the session's writer was half full (the rest is kept "
                    + "for the other streams)"
            } else if stream.encoderDropped > 0 {
                text += ", \(stream.encoderDropped) dropped by its encoder (it was behind; frame numbers stay exact)"
            }
            if let gaps = sources[index].deviceGaps?.count, gaps > 0 { text += ", \(gaps) skipped by the device" }
            if let error = stream.captureError { text += "; ended early: \(error)" }
            text += "\n"
        }
        if let watch = diskWatch, case let stalls = watch.summary(), !stalls.isEmpty {
            text +=
                cFormat("  the disk stalled (an operation of %g s or more): ", Double(watch.stallNs) / 1e9)
                + stalls.map {
                    "\($0.file) \($0.operation.rawValue) \($0.count) time\($0.count == 1 ? "" : "s"), "
                        + cFormat("%.1f s in all, longest %.1f s", $0.totalSeconds, $0.longestSeconds)
                }.joined(separator: "; ") + "\n"
        }
        for (stream, lines) in zip(summary, warnings) {
            for line in lines { text += "warning: \(stream.id): \(line)\n" }
        }
        return text + "check it with: fieldcap validate \(directory)\n"
    }

    /// `{"event":"stop","elapsed_s":...,"reason":...,"directory":...,"streams":[{"id","written",
    /// "dropped","rate","time_source","warnings",...}],"disk_stalls":[...]}`.
    func stopLine(
        _ summary: [Recorder.StreamSummary], warnings: [[String]], elapsed: Double, reason: String
    ) -> [String: JSONValue] {
        let streams: [JSONValue] = summary.enumerated().map { index, stream in
            var entry: [String: JSONValue] = [
                "id": .string(stream.id), "written": JSONValue(stream.written),
                "dropped": JSONValue(stream.dropped + stream.encoderDropped),
                "encoder_dropped": JSONValue(stream.encoderDropped),
                "rate": .double(Double(stream.written) / max(elapsed, 0.001)),
                "time_source": .string(sources[index].report.timeSource),
                "warnings": .array(warnings[index].map(JSONValue.string)),
            ]
            if let gaps = sources[index].deviceGaps?.count { entry["device_gaps"] = JSONValue(gaps) }
            if let error = stream.captureError { entry["ended_early"] = .string(error) }
            return .object(entry)
        }
        var line: [String: JSONValue] = [
            "event": "stop", "elapsed_s": .double(elapsed), "reason": .string(reason), "directory": .string(directory),
            "streams": .array(streams),
        ]
        line["disk_stalls"] = .array(
            (diskWatch?.summary() ?? []).map {
                [
                    "file": .string($0.file), "operation": .string($0.operation.rawValue),
                    "count": JSONValue($0.count), "seconds": .double($0.totalSeconds),
                    "longest_seconds": .double($0.longestSeconds),
                ]
            })
        return line
    }
}

/// One line on a terminal's stderr, redrawn in place: the status while recording, the progress
/// while validating.
final class TerminalLine {
    let isTerminal = isatty(STDERR_FILENO) == 1
    private var drawn = false

    func draw(_ text: String) {
        writeStandardError("\r\u{1B}[K" + text)
        drawn = true
    }

    /// Ends the line where it is, so what follows starts below it.
    func keep() {
        if drawn { writeStandardError("\n") }
    }

    /// Erases the line, so what follows takes its place.
    func erase() {
        if drawn { writeStandardError("\r\u{1B}[K") }
    }
}
