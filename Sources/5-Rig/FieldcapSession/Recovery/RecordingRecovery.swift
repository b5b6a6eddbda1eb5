import FieldcapCore
import FieldcapMedia
import FieldcapSegments
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap recover` for a segmented recording: the segment (or two, at a boundary) that was
/// being written when the recorder died is finished like any session, the one made ready ahead
/// and never written into is removed, and the index is brought up to date. Finished segments are
/// not touched.
public enum RecordingRecovery {
    public enum Outcome {
        /// Every segment was finished and the index says so: nothing was changed.
        case alreadyComplete(state: String)
        /// The segments finished now, and the recording's validation afterwards.
        case recovered(segments: [String], removed: [String], RecordingValidator.Report)
    }

    /// Why a recording was left as it was.
    public struct Refusal: Error, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "\(path) \(reason)" }
    }

    /// nil when `directory` holds no recording index.
    public static func recover(directory: String, say: (String) -> Void) throws -> Outcome? {
        guard var index = RecordingIndex.read(directory: directory) else { return nil }
        try RecordingLock.refuseIfLive(directory, doing: "recover it")
        let unfinished = index.segments.filter { $0.state == .recording }
        if unfinished.isEmpty && index.state != "recording" { return .alreadyComplete(state: index.state) }
        // Before anything changes: a segment that is a link leads outside the recording, where
        // recover must not cut, write or remove anything (#42).
        for segment in unfinished where PathName.isSymbolicLink("\(directory)/\(segment.directory)") {
            throw Refusal(
                path: "\(directory)/\(segment.directory)",
                reason: "is a symbolic link, not a directory of the recording; nothing recovered or changed")
        }
        // Nor does one segment change while another would be refused.
        for segment in unfinished {
            let path = "\(directory)/\(segment.directory)"
            let layout = SessionLayout(directory: path)
            guard FileManager.default.fileExists(atPath: path), !neverWritten(layout, streams: index.streams),
                let start = Sidecar.Contents(layout: layout)
            else { continue }
            try SessionFinisher.refuseWhatCannotBeRecovered(directory: path, start: start)
        }
        var recovered: [String] = []
        var removed: [String] = []
        for segment in unfinished {
            let path = "\(directory)/\(segment.directory)"
            let layout = SessionLayout(directory: path)
            if !FileManager.default.fileExists(atPath: path) || neverWritten(layout, streams: index.streams) {
                // Made ready ahead of its start, never written into: nothing to keep.
                try? FileManager.default.removeItem(atPath: path)
                index.segments.removeAll { $0.number == segment.number }
                removed.append(segment.directory)
                say("\(segment.directory): made ready but never written into: removed")
                continue
            }
            say("\(segment.directory):")
            switch try SessionFinisher.recover(directory: path, say: { say("  \($0)") }) {
            case .notAFieldcapSession:
                say("  not a fieldcap session (no readable fieldcap.json): left as it is")
                continue
            case .alreadyValid, .recovered:
                break
            }
            recovered.append(segment.directory)
            if let position = index.segments.firstIndex(where: { $0.number == segment.number }) {
                index.segments[position].state = .recovered
                index.segments[position].bytes = SessionFiles.bytesOnDisk(path)
                index.segments[position].streams = counts(
                    layout, streams: index.streams, startNs: segment.startMonotonicRawNs)
            }
        }
        // A segment made ready after the last one the index lists, the recorder killed before it
        // listed it: removed when it holds only what the recorder makes ready (#42's rule).
        let last = index.segments.map(\.number).max() ?? 0
        let listed = Set(index.segments.map(\.directory))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] where !listed.contains(name)
        {
            guard name.count > 9, name.dropFirst(8).first == "-", let number = Int(name.prefix(8)), number > last,
                name.prefix(8).allSatisfy(\.isASCII), !PathName.isSymbolicLink("\(directory)/\(name)"),
                neverWritten(SessionLayout(directory: "\(directory)/\(name)"), streams: index.streams)
            else { continue }
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
            removed.append(name)
            say("\(name): made ready but not yet in the index, never written into: removed")
        }
        // A mark whose line reached its segment but not the index (the recorder killed between
        // the two writes) goes into the index.
        let known = Set((index.marks ?? []).map(\.id))
        let found = index.presentSegments.flatMap { MarkLine.marks(inDirectory: "\(directory)/\($0.directory)") }
        let missing = found.filter { !known.contains($0.id) }
        if !missing.isEmpty {
            index.marks = ((index.marks ?? []) + missing).sorted { ($0.id.count, $0.id) < ($1.id.count, $1.id) }
            say("marks \(missing.map(\.id).joined(separator: ", ")): taken from the segments into the index")
        }
        if index.state == "recording" { index.state = "recovered" }
        try index.write(directory: directory)
        return .recovered(
            segments: recovered, removed: removed,
            RecordingValidator.validate(directory: directory) ?? RecordingValidator.Report())
    }

    /// Whether no stream wrote anything into the segment, and it holds only what the recorder
    /// made ready there: no timestamp or sensor line, no frame log line (written right after
    /// each frame, before the SyncField writer's batch of lines reaches the file), no frame in a
    /// video, no other file.
    static func neverWritten(_ layout: SessionLayout, streams: [RecordingIndex.Stream]) -> Bool {
        func isEmpty(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) != 0 || info.st_size == 0
        }
        let noLines =
            streams.allSatisfy { stream in
                isEmpty(layout.timestamps(stream.id)) && isEmpty(layout.sensor(stream.id))
                    && isEmpty(layout.frameLog(stream.id))
            } && isEmpty(layout.path(MarkLine.fileName))
        // Nor a frame in a video, nor a file the recorder does not make there: recover removes
        // only what the recorder made ready itself; a video or a file put there stays (#42).
        let made = SessionFiles.names(streams: streams.map(\.id)).subtracting([
            SessionLayout.manifestName, SessionLayout.syncPointName,
        ])
        guard noLines, let names = try? FileManager.default.contentsOfDirectory(atPath: layout.directory),
            names.allSatisfy(made.contains)
        else { return false }
        return streams.allSatisfy { stream in
            let video = layout.video(stream.id)
            if isEmpty(video) { return true }
            // A header and its track, a few hundred bytes; or those bytes damaged (a power cut
            // before the page cache reached the disk): no frame a line could account for.
            guard let scan = try? MatroskaScan(path: video) else { return false }
            return scan.frames.isEmpty && scan.fileSize <= 4096
        }
    }

    /// Each stream's lines and first and last `capture_ns`, read from its timestamp file (the
    /// device's sequence numbers are not in the session's files).
    static func counts(
        _ layout: SessionLayout, streams: [RecordingIndex.Stream], startNs: UInt64
    )
        -> [String: RecordingIndex.StreamCounts]
    {
        var result: [String: RecordingIndex.StreamCounts] = [:]
        for stream in streams {
            let lines =
                (try? String(contentsOfFile: layout.timestamps(stream.id), encoding: .utf8))?
                .split(separator: "\n") ?? []
            func captureNs(_ line: Substring?) -> UInt64? {
                guard let line else { return nil }
                return JSONValue.parse(line.utf8)?["capture_ns"]?.uint64Value
            }
            let first = captureNs(lines.first)
            result[stream.id] = RecordingIndex.StreamCounts(
                records: lines.count, firstCaptureNs: first, lastCaptureNs: captureNs(lines.last), firstSequence: nil,
                lastSequence: nil, missing: 0,
                firstAfterStartSeconds: first.map { Double(Int64(bitPattern: $0 &- startNs)) / 1e9 })
        }
        return result
    }
}
