import FieldcapArchive
import FieldcapExport
import FieldcapFaces
import FieldcapRig
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import Glibc

/// `uploadTimeRange`: the wall-clock range cut from what the rig recorded (`fieldcap
/// extract`'s own extractor, across segments), sent as files AllSpark's server can use: each
/// camera as an H.264 MP4 (`fieldcap export --format mp4`), which it files as video and its page
/// plays, and the rest of the session (frame logs with each frame's `capture_ns`, sensors,
/// manifest, sync point, sidecar) as one tar it files as data. A camera that cannot become an
/// MP4 (a hardware encoder's H.264, an odd size) goes inside the tar as recorded, and the
/// report says why. With faces to cover, every MP4 has its faces covered, and a camera that
/// cannot become one is left out whole: its frames never leave the rig as recorded (the tar
/// keeps its frame log, and `ID.faces_covered.json` what was covered). Everything is staged under the root's hidden scratch names and removed after
/// each attempt, sent or not. Each name ends in `_<unix seconds of the range's start>`:
/// AllSpark's server dates an upload by that suffix (else by the day it arrives).
struct RangeUpload: Sendable {
    let fromNs: UInt64
    let toNs: UInt64

    struct Staged: Sendable {
        struct File: Sendable {
            var path: String
            var filename: String
            var size: UInt64
            var mimetype: String
        }

        /// The videos first, then the tar.
        var files: [File]
        var scratch: String
        /// The recording it was cut from.
        var source: String
        /// What it holds, for the report: `cam0 45 frames, imu0 150 records from 2 segments`.
        var summary: String
        /// Why a camera is in the tar rather than an MP4, when one is.
        var videoProblem: String?
        var size: UInt64 { files.reduce(0) { $0 + $1.size } }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    var rangeText: String {
        "\(Sidecar.utc(Date(timeIntervalSince1970: Double(fromNs) / 1e9))) "
            + "to \(Sidecar.utc(Date(timeIntervalSince1970: Double(toNs) / 1e9)))"
    }

    /// The name the range's files share: `rig-20261124T114252.123Z-20261124T114302.123Z`.
    func baseName(hostId: String) -> String { "\(hostId)-\(Self.compact(fromNs))-\(Self.compact(toNs))" }

    /// Extracts, encodes and archives (blocking: file work, and libx264 on this thread).
    func stage(root: String, hostId: String, faces: FaceCover.Settings? = nil) throws -> Staged {
        guard let source = try SessionCatalog.newest(overlapping: fromNs, toNs, root: root) else {
            throw Failure(description: "nothing on this rig was recorded from \(rangeText)")
        }
        let scratch = "\(root)/.upload-\(UUID().uuidString)"
        let session = "\(scratch)/session", videos = "\(scratch)/videos"
        let base = baseName(hostId: hostId), dated = "_\(fromNs / 1_000_000_000)"
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: false)
            let outcome = try RangeExtractor.extract(
                .init(source: source.path, fromNs: fromNs, toNs: toNs, out: session))
            var files: [Staged.File] = []
            var videoProblem: String?
            let layout = SessionLayout(directory: session)
            let cameras = (Sidecar.Contents(layout: layout)?.streams ?? []).filter { $0.format != nil }.map(\.id)
            if !cameras.isEmpty {
                do {
                    var request = SessionExporter.Request(source: session, format: .mp4, out: videos)
                    request.faces = faces
                    _ = try SessionExporter.export(request)
                    for id in cameras {
                        let path = "\(videos)/\(id).mp4"
                        files.append(
                            .init(
                                path: path, filename: "\(base)-\(id)\(dated).mp4", size: try Self.size(of: path),
                                mimetype: "video/mp4"))
                        // The tar keeps the frames' times; the video itself goes as the MP4.
                        try FileManager.default.removeItem(atPath: layout.video(id))
                        let report = "\(videos)/\(id).faces_covered.json"
                        if FileManager.default.fileExists(atPath: report) {
                            try FileManager.default.moveItem(
                                atPath: report, toPath: "\(session)/\(id).faces_covered.json")
                        }
                    }
                } catch let error as ExportError {
                    videoProblem = error.message
                    files.removeAll()
                    // Faces to cover that could not be: no video leaves as recorded.
                    if faces != nil {
                        for id in cameras where FileManager.default.fileExists(atPath: layout.video(id)) {
                            try FileManager.default.removeItem(atPath: layout.video(id))
                        }
                    }
                }
            }
            let tar = "\(scratch)/\(base).tar"
            let size = try TarFile.write(directory: session, name: base, to: tar)
            files.append(.init(path: tar, filename: "\(base)\(dated).tar", size: size, mimetype: "application/x-tar"))
            let counts = outcome.records.map { "\($0.id) \($0.count)" }.joined(separator: ", ")
            let parts = outcome.parts.count
            return Staged(
                files: files, scratch: scratch, source: source.path,
                summary: "\(counts) from \(parts) segment\(parts == 1 ? "" : "s") of \(source.name)",
                videoProblem: videoProblem)
        } catch let failure as RangeExtractor.Failure {
            Self.remove(scratch: scratch)
            throw Failure(description: failure.message)
        } catch {
            Self.remove(scratch: scratch)
            throw Failure(description: "\(error)")
        }
    }

    private static func size(of path: String) throws -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw Failure(description: "stat \(path): \(String(cString: strerror(errno)))")
        }
        return UInt64(info.st_size)
    }

    /// A range comes back from the server as Unix seconds in a double, off by up to a few
    /// hundred nanoseconds: ranges this close are the same range.
    static let slackNs: UInt64 = 1_000_000

    func isSame(as other: RangeUpload) -> Bool {
        max(fromNs, other.fromNs) - min(fromNs, other.fromNs) <= Self.slackNs
            && max(toNs, other.toNs) - min(toNs, other.toNs) <= Self.slackNs
    }

    /// Whether `delivered` (inclusive) holds this range, give or take `slackNs` at each end.
    func isCovered(by delivered: ClosedRange<UInt64>) -> Bool {
        delivered.lowerBound <= fromNs + Self.slackNs && delivered.upperBound + 1 + Self.slackNs >= toNs
    }

    /// The range cut at the segment boundaries of the recording at `directory`: one range a
    /// segment it overlaps (just itself when the recording is not segmented).
    func split(byRecordingIndexOf directory: String) -> [RangeUpload] {
        let parts = UploadQueue.finishedSegments(of: directory).compactMap { segment -> RangeUpload? in
            let from = max(fromNs, segment.fromNs), to = min(toNs, segment.toNs)
            return from < to ? RangeUpload(fromNs: from, toNs: to) : nil
        }
        return parts.isEmpty ? [self] : parts
    }

    static func remove(scratch: String) {
        try? FileManager.default.removeItem(atPath: scratch)
    }

    /// `20261124T114252.123Z`: a UTC time as a file name has it.
    static func compact(_ ns: UInt64) -> String {
        Sidecar.utc(Date(timeIntervalSince1970: Double(ns) / 1e9)).filter { $0 != "-" && $0 != ":" }
    }
}
