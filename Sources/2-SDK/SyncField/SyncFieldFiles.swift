/// The names of a SyncField session's files, as the format fixes them: spelled here once for the
/// writer, the validator and recovery, and for fieldcap's `SessionLayout`, which adds its own.
package enum SyncFieldFiles {
    package static let manifest = "manifest.json"
    package static let syncPoint = "sync_point.json"
    package static let timestampsSuffix = ".timestamps.jsonl"
    package static let sensorSuffix = ".jsonl"

    /// `{id}.timestamps.jsonl`: every stream's timestamp lines.
    package static func timestamps(_ id: String) -> String { id + timestampsSuffix }
    /// `{id}.jsonl`: a sensor stream's values.
    package static func sensor(_ id: String) -> String { id + sensorSuffix }
}
