/// The names of a SyncField session's files, as the format fixes them: spelled here once for the
/// writer, the validator and recovery, and for fieldcap's `SessionLayout`, which adds its own.
enum SyncFieldFiles {
    static let manifest = "manifest.json"
    static let syncPoint = "sync_point.json"
    static let timestampsSuffix = ".timestamps.jsonl"
    static let sensorSuffix = ".jsonl"

    /// `{id}.timestamps.jsonl`: every stream's timestamp lines.
    static func timestamps(_ id: String) -> String { id + timestampsSuffix }
    /// `{id}.jsonl`: a sensor stream's values.
    static func sensor(_ id: String) -> String { id + sensorSuffix }
}
