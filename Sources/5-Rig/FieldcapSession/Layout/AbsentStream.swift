import FieldcapCore
import FieldcapMedia
import FieldcapSystem
import FoundationEssentials
import SyncField

/// A stream that recorded nothing in a session: a segment that closed while its device was away.
/// The SDK writes such a camera as one it linked and never stamped, and leaves such a sensor out
/// of the manifest (it makes a sensor's files at its first record); every reader (validate,
/// request, upload, export, extract) asks this one question before treating it as empty.
public enum AbsentStream {
    /// Whether the session at `directory` holds stream `id` as one that recorded nothing.
    public static func recordedNothing(directory: String, id: String) -> Bool {
        let layout = SessionLayout(directory: directory)
        guard let data = FileManager.default.contents(atPath: layout.manifest),
            let streams = JSONValue.parse(data)?["streams"]
        else { return false }
        guard let entry = streams[id] else { return sensorRecordedNothing(layout, id: id) }
        return recordedNothing(directory: directory, id: id, entry: entry)
    }

    /// A sensor the sidecar lists with nothing written, which the manifest leaves out and of which
    /// the session holds no file: one whose device was away for the whole session, or a feed no
    /// program fed. Files of it
    /// (lines the manifest does not count) are damage.
    public static func sensorRecordedNothing(_ layout: SessionLayout, id: String) -> Bool {
        guard PathName.isPlainName(id), !FileManager.default.fileExists(atPath: layout.timestamps(id)),
            !FileManager.default.fileExists(atPath: layout.sensor(id)),
            let data = FileManager.default.contents(atPath: layout.sidecar),
            let entry = JSONValue.parse(data)?["streams"]?.arrayValue?.first(where: { $0["id"]?.stringValue == id })
        else { return false }
        // A fed stream's program may never have connected: the same nothing.
        return ["sensor", "feed"].contains(entry["kind"]?.stringValue) && entry["written"]?.intValue == 0
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
