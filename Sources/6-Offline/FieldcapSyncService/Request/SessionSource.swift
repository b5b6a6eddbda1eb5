import FieldcapCore
import FieldcapOutput
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import SyncField

/// One finished SyncField session as the SyncField service sees it: its host id and its streams,
/// with the files each one sends, read from `manifest.json` (so a session written by the Swift
/// SDK on a phone works as well as fieldcap's), in the order they were recorded.
public struct SessionSource: Sendable, Equatable {
    public struct Stream: Sendable, Equatable {
        public enum Kind: String, Sendable { case video, sensor }

        public var id: String
        public var kind: Kind
        /// The video file on this machine (a video stream with a linked path), else nil.
        public var videoFile: String?
        /// `{id}.timestamps.jsonl` on this machine.
        public var timestampsFile: String
        /// `{id}.jsonl`, for a sensor stream.
        public var sensorFile: String?

        /// What the file-upload mode sends as the stream's `files` entry: its video, or a
        /// sensor's own data.
        public var dataFile: String? { videoFile ?? sensorFile }
    }

    public var directory: String
    /// The directory's last component: the name a multi-session body files it under.
    public var name: String
    public var hostId: String
    public var streams: [Stream]
    /// Cameras the manifest lists that recorded nothing here (linked, never stamped: a segment
    /// that closed while the device was away): left out of the request, which has nothing of
    /// them to align.
    public var absentStreams: [String] = []

    /// Reads `directory`'s manifest and checks that every file it names is there.
    public init(directory: String) throws(SyncRequestError) {
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.directory = directory
        name = URL(fileURLWithPath: directory).lastPathComponent
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory
        else { throw .unreadableSession(directory, "no such directory") }
        if RecordingIndex.read(directory: directory) != nil { throw .segmentedRecording(directory) }
        let layout = SessionLayout(directory: directory)
        guard let bytes = FileManager.default.contents(atPath: layout.manifest) else {
            throw .unreadableSession(
                directory,
                "no manifest.json: not a finished SyncField session (one still "
                    + "recording, or stopped by a crash: `fieldcap recover` finishes it)"
            )
        }
        let manifest: JSONValue
        do {
            manifest = try JSONValue(parsing: bytes)
        } catch {
            throw .unreadableSession(directory, "manifest.json is not JSON (\(error.message) at byte \(error.column))")
        }
        guard let hostId = manifest["host_id"]?.stringValue, !hostId.isEmpty else {
            throw .unreadableSession(directory, "manifest.json has no host_id")
        }
        guard let members = manifest["streams"]?.objectValue else {
            throw .unreadableSession(directory, "manifest.json has no streams object")
        }
        self.hostId = hostId
        var streams: [Stream] = []
        // In the manifest's order: the SDK writes the streams in Foundation's key order.
        for id in JSONKeyOrder.sorted(members.keys) {
            if let problem = StreamID.problem(with: id) {
                throw .unreadableSession(
                    directory, "manifest.json names a stream '\(id)' that cannot be one: \(problem)")
            }
            let entry = members[id]!
            let kind: Stream.Kind = entry["type"]?.stringValue == "sensor" ? .sensor : .video
            // A camera that recorded nothing here (linked, never stamped, no frame in its video).
            if AbsentStream.recordedNothing(directory: directory, id: id, entry: entry) {
                absentStreams.append(id)
                continue
            }
            let timestamps = layout.path(entry["timestamps_path"]?.stringValue ?? SessionLayout.timestampsName(id))
            var stream = Stream(id: id, kind: kind, videoFile: nil, timestampsFile: timestamps, sensorFile: nil)
            if kind == .sensor {
                stream.sensorFile = layout.path(entry["sensor_path"]?.stringValue ?? SessionLayout.sensorName(id))
            } else if let linked = entry["path"]?.stringValue {
                stream.videoFile = Self.locate(linked, in: directory)
            }
            streams.append(stream)
        }
        // fieldcap's sidecar lists the streams in the order they were given (cameras first):
        // "the first video" is then the first camera of the command line or the config, not the
        // first in the manifest's alphabetical order.
        if let sidecar = Sidecar.Contents(layout: layout) {
            let order = Dictionary(sidecar.streams.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
            streams = streams.enumerated().sorted { a, b in
                (order[a.element.id] ?? Int.max, a.offset) < (order[b.element.id] ?? Int.max, b.offset)
            }.map(\.element)
        }
        self.streams = streams
        for stream in streams {
            for file in [stream.timestampsFile, stream.sensorFile].compactMap({ $0 })
            where !FileManager.default.fileExists(atPath: file) {
                throw .unreadableSession(directory, "stream \(stream.id): \(file) is missing")
            }
            if stream.kind == .video, stream.videoFile == nil {
                throw .unreadableSession(
                    directory,
                    "stream \(stream.id): its video file is missing (manifest path not found here or in the session)")
            }
        }
    }

    /// The file of the linked path's name in the session, else the linked path as it was when
    /// recorded (relative: from the session). The session's own file first: a session copied off
    /// the rig keeps its files, not its absolute paths, and must not send the original's (#42).
    static func locate(_ linked: String, in directory: String) -> String? {
        let local = "\(directory)/\(URL(fileURLWithPath: linked).lastPathComponent)"
        if FileManager.default.fileExists(atPath: local) { return local }
        let given = linked.hasPrefix("/") ? linked : "\(directory)/\(linked)"
        return FileManager.default.fileExists(atPath: given) ? given : nil
    }
}
