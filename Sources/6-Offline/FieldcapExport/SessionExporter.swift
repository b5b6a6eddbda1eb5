import CFieldcapLinux
import FieldcapArchive
import FieldcapCalibration
import FieldcapCore
import FieldcapFaces
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// The layouts `fieldcap export` writes.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// One MCAP file, ROS 2 profile (Foxglove, `ros2 bag`, the Python `mcap` and `rosbags`).
    case mcap
    /// The ASL/EuRoC folder (ORB-SLAM3, Basalt, VINS-Fusion, Kalibr).
    case euroc
    /// An image folder in the iOS 3D Logger's layout (photogrammetry, NeRF).
    case images
    /// Each camera as an H.264 MP4 (browsers, phones, VLC, AllSpark's server page).
    case mp4
}

/// `fieldcap export`: a session, or a time range of a recording, in a layout the field's tools
/// read. The input is never modified; the output is written under a hidden name beside `out`
/// and renamed to `out` only when whole, so an interrupted export leaves nothing that looks
/// finished; an `out` that exists is refused.
public enum SessionExporter {
    public struct Request: Sendable {
        public var source: String
        public var format: ExportFormat
        /// The file (`mcap`) or directory (`--rosbag2`, `euroc`, `images`, `mp4`) to create.
        public var out: String
        /// Stream ids to export; nil: all.
        public var streams: [String]?
        /// A wall-clock range (ns since the epoch; `to` not included), taken as `fieldcap
        /// extract` takes it. Needed for a segmented recording only if not all of it is wanted.
        public var fromNs: UInt64?
        public var toNs: UInt64?
        public var compression: MCAPCompression = .zstd
        public var rosbag2 = false
        /// 16-bit cameras (Y16) that hold depth in millimetres; Z16 cameras always do.
        public var depthStreams: [String] = []
        /// euroc: RGB PNGs instead of grey.
        public var colour = false
        /// images: JPEG quality (1-100), and which frames to keep: every n-th, at most `fps` a second.
        public var quality = 90
        public var every = 1
        public var fps: Double?
        /// Cover the faces in every camera's frames before they are written (nil: as recorded).
        public var faces: FaceCover.Settings?

        public init(source: String, format: ExportFormat, out: String) {
            self.source = source
            self.format = format
            self.out = out
        }
    }

    public struct Progress: Sendable {
        public enum Stage: String, Sendable {
            case extracting = "extracting the range"
            case validating = "checking the session"
            case writing
        }

        public var stage: Stage
        /// Frames written so far, and how many the session holds (0 while not known).
        public var done: Int
        public var total: Int
    }

    public struct Outcome: Sendable {
        public var out: String
        /// What was written, one line per stream or topic.
        public var lines: [String]
    }

    public static func export(
        _ request: Request, progress: @escaping (Progress) -> Void = { _ in }, isCancelled: () -> Bool = { false }
    ) throws(ExportError) -> Outcome {
        let out = request.out.hasSuffix("/") ? String(request.out.dropLast()) : request.out
        guard !out.isEmpty else { throw ExportError(.request, "--out: give the file or directory to create") }
        if FileManager.default.fileExists(atPath: out) {
            throw ExportError(.request, "--out \(out) exists: give a new path (an export never overwrites)")
        }
        if request.rosbag2 && request.format != .mcap {
            throw ExportError(.request, "--rosbag2 is an option of --format mcap")
        }
        let base = PathName.base(of: out)
        let parent = PathName.directory(of: out)
        let parentPath = parent.isEmpty ? "." : parent
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: parentPath, isDirectory: &isDirectory), isDirectory
        else { throw ExportError(.request, "--out \(out): \(parentPath) is not a directory; create it first") }
        let staging = "\(parentPath)/.\(base).partial-\(getpid())"
        let scratch = "\(parentPath)/.\(base).range-\(getpid())"
        defer {
            try? FileManager.default.removeItem(atPath: staging)
            try? FileManager.default.removeItem(atPath: scratch)
        }

        let directory = try sessionDirectory(request, scratch: scratch, progress: progress)
        let session = try ExportSession(directory: directory) { step in
            progress(Progress(stage: .validating, done: step.bytesDone, total: step.bytesTotal))
        }
        let streams = try session.streams(named: request.streams)
        let calibration = try session.readCalibration()
        for id in request.depthStreams {
            guard let stream = streams.first(where: { $0.id == id }) else {
                throw ExportError(.request, "--depth \(id): no such camera among the streams exported")
            }
            guard stream.format?.pixelFormat.isSixteenBit == true else {
                throw ExportError(
                    .request, "--depth \(id): \(stream.format?.description ?? "a sensor stream") is not a 16-bit format"
                )
            }
        }
        if let faces = request.faces {
            try checkFacesCanBeCovered(
                streams.filter { $0.isCamera && !$0.holdsDepth(Set(request.depthStreams)) }, settings: faces)
        }
        let total = streams.compactMap { $0.isCamera ? session.recordCount($0.id) : nil }.reduce(0, +)
        let report: (Int) -> Void = { progress(Progress(stage: .writing, done: $0, total: total)) }

        var lines: [String] = []
        switch request.format {
        case .mcap:
            let file = request.rosbag2 ? "\(staging)/\(base)_0.mcap" : staging
            if request.rosbag2 { try makeDirectory(staging) }
            let summary = try MCAPExport.write(
                session: session, streams: streams, path: file,
                options: .init(
                    compression: request.compression, depthStreams: Set(request.depthStreams), faces: request.faces,
                    feedsAsJSON: !request.rosbag2),
                calibration: calibration, progress: report, isCancelled: isCancelled)
            if request.rosbag2 {
                try ExportFile.write(
                    Array(RosbagMetadata.yaml(summary: summary, file: "\(base)_0.mcap").utf8),
                    to: "\(staging)/metadata.yaml")
            }
            lines = summary.topics.map { "\($0.topic) (\($0.type)): \($0.count) messages" }
            if !summary.facesCovered.isEmpty {
                lines.append(
                    "faces covered in " + summary.facesCovered.keys.sorted().joined(separator: ", ")
                        + " (metadata fieldcap.faces_covered)")
            }
        case .euroc:
            lines = try EuRoCExport.write(
                session: session, streams: streams, directory: staging,
                options: .init(colour: request.colour, depthStreams: Set(request.depthStreams), faces: request.faces),
                calibration: calibration, progress: report, isCancelled: isCancelled)
        case .images:
            lines = try ImageFolderExport.write(
                session: session, streams: streams, directory: staging,
                options: .init(
                    quality: request.quality, every: request.every, fps: request.fps,
                    depthStreams: Set(request.depthStreams), faces: request.faces),
                calibration: calibration, progress: report, isCancelled: isCancelled)
        case .mp4:
            lines = try MP4Export.write(
                session: session, streams: streams, directory: staging, options: .init(faces: request.faces),
                progress: report,
                isCancelled: isCancelled)
        }
        try syncAndRename(staging, to: out)
        return Outcome(out: out, lines: lines)
    }

    /// Every camera whose faces are to be covered can be, and the detector loads: said before
    /// any camera is written (a long camera first, then a refusal, would waste the time).
    private static func checkFacesCanBeCovered(
        _ cameras: [ExportSession.Stream], settings: FaceCover.Settings
    ) throws(ExportError) {
        for camera in cameras {
            guard let format = camera.format else { continue }
            // An FFV1 camera comes decoded: its format is the captured one.
            if case .failure(let problem) = StoredFrameCover.layout(stored: format, captured: nil) {
                throw ExportError(
                    .request,
                    "--blur-faces: \(camera.id) is \(format): \(problem); leave it out with --streams")
            }
        }
        do throws(FaceCoverError) { _ = try MTCNNFaceDetector(minFace: settings.minFace) } catch {
            throw ExportError(.request, "--blur-faces: \(error)")
        }
    }

    /// The session to read: `source` itself, or the range extracted from it into `scratch`.
    private static func sessionDirectory(
        _ request: Request, scratch: String, progress: (Progress) -> Void
    ) throws(ExportError) -> String {
        let isRecording = RecordingIndex.read(directory: request.source) != nil
        guard request.fromNs != nil || request.toNs != nil || isRecording else { return request.source }
        progress(Progress(stage: .extracting, done: 0, total: 0))
        do {
            try makeDirectory(scratch)
            let outcome = try RangeExtractor.extract(
                .init(
                    source: request.source, fromNs: request.fromNs ?? 0, toNs: request.toNs ?? UInt64(Int64.max),
                    out: "\(scratch)/session"))
            return outcome.out
        } catch let error as RangeExtractor.Failure {
            throw ExportError(.session, error.message)
        } catch let error as ExportError {
            throw error
        } catch {
            throw ExportError(.session, "\(request.source): \(error)")
        }
    }

    /// Syncs what was written (one `syncfs` for the thousands of files of an image folder), then
    /// gives it its name.
    private static func syncAndRename(_ staging: String, to out: String) throws(ExportError) {
        let fd = open(staging, O_RDONLY | O_CLOEXEC)
        if fd >= 0 {
            defer { close(fd) }
            if CFieldcapLinux_syncfs(fd) != 0 { throw .io("syncfs", path: staging, errno: errno) }
        }
        if FileManager.default.fileExists(atPath: out) {
            throw ExportError(.request, "--out \(out) appeared while exporting: the export is not kept")
        }
        if rename(staging, out) != 0 { throw .io("rename to \(out)", path: staging, errno: errno) }
    }
}

extension ExportSession {
    /// How many records the sidecar says a stream wrote (0 when it does not say).
    func recordCount(_ id: String) -> Int {
        let entries = document["streams"]?.arrayValue(of: \.objectValue) ?? []
        return entries.first { $0["id"]?.stringValue == id }?["written"]?.intValue ?? 0
    }

    /// The cameras' calibration the session keeps (`fieldcap record --intrinsics`), by stream id.
    package func readCalibration() throws(ExportError) -> [String: CameraCalibration] {
        var cameras: [String: CameraCalibration] = [:]
        for entry in document["streams"]?.arrayValue(of: \.objectValue) ?? [] {
            guard let id = entry["id"]?.stringValue, let values = entry["calibration"]?.objectValue else { continue }
            do throws(CalibrationError) {
                cameras[id] = try CameraCalibration(sidecarEntry: values, origin: "\(layout.sidecar) (\(id))")
            } catch {
                throw ExportError(.session, error.message)
            }
        }
        return cameras
    }
}
