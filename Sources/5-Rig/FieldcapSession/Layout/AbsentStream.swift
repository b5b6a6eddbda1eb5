import FieldcapCore
import FieldcapMedia
import FieldcapSystem
import FoundationEssentials
import SyncField

/// A camera that recorded nothing in a session: a segment that closed while its device was away.
/// The SDK writes such a stream as one it linked and never stamped, and every reader (validate,
/// request, upload, export, extract) asks this one question before treating it as empty.
public enum AbsentStream {
    /// Whether the session at `directory` holds camera `id` as one that recorded nothing.
    public static func recordedNothing(directory: String, id: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: SessionLayout(directory: directory).manifest),
            let entry = JSONValue.parse(data)?["streams"]?[id]
        else { return false }
        return recordedNothing(directory: directory, id: id, entry: entry)
    }

    /// Whether `entry` (the manifest's stream `id`) is a camera that recorded nothing: a video,
    /// linked (`path`) and never stamped (no `timestamps_path`, no `frame_count`), no
    /// `{id}.timestamps.jsonl` in the session, and a linked video that holds the track and no
    /// frame. Anything short of all of it is damage, for the reader to refuse: frames whose lines
    /// are gone must never be passed over as a device that was away.
    public static func recordedNothing(directory: String, id: String, entry: JSONValue) -> Bool {
        guard entry["type"]?.stringValue == "video", entry["timestamps_path"] == nil, entry["frame_count"] == nil,
            PathName.isPlainName(id), let path = entry["path"]?.stringValue,
            !FileManager.default.fileExists(atPath: SessionLayout(directory: directory).timestamps(id)),
            let video = SessionValidator.resolve(path, in: directory),
            let scan = try? MatroskaScan(path: video), scan.isMatroska, scan.hasVideoTrack
        else { return false }
        return scan.frames.isEmpty
    }
}
