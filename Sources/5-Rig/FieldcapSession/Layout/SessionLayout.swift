/// Every file of a fieldcap session, named once. The SyncField files (`manifest.json`,
/// `sync_point.json`, `{id}.timestamps.jsonl`, `{id}.jsonl`) are named by the format (SyncField
/// 0.1, as the SDK writes them; a test holds these names to what `SyncSession` writes); fieldcap
/// adds each camera's video and frame log, the sidecar, and the space it holds in reserve while
/// recording.
public struct SessionLayout: Sendable, Equatable {
    /// The session directory, as the caller spells it.
    public var directory: String

    public init(directory: String) { self.directory = directory }

    public static let manifestName = "manifest.json"
    public static let syncPointName = "sync_point.json"
    /// What the SyncField format has no place for: devices, formats, drops, why it stopped.
    public static let sidecarName = "fieldcap.json"
    /// Space held while recording, so a full disk leaves room to finish (`DiskReserve`).
    public static let reserveName = ".fieldcap-reserve"

    /// `{id}.mkv`: a camera's frames (Matroska).
    public static func videoName(_ id: String) -> String { "\(id).mkv" }
    /// `{id}.frames.ndjson`: each frame's timestamp values, synced before its video, for recovery.
    public static func frameLogName(_ id: String) -> String { "\(id).frames.ndjson" }
    /// `{id}.timestamps.jsonl`: every stream's timestamp lines (SyncField).
    public static func timestampsName(_ id: String) -> String { "\(id).timestamps.jsonl" }
    /// `{id}.jsonl`: a sensor stream's values (SyncField).
    public static func sensorName(_ id: String) -> String { "\(id).jsonl" }

    public var manifest: String { path(Self.manifestName) }
    public var syncPoint: String { path(Self.syncPointName) }
    public var sidecar: String { path(Self.sidecarName) }
    public var reserve: String { path(Self.reserveName) }
    public func video(_ id: String) -> String { path(Self.videoName(id)) }
    public func frameLog(_ id: String) -> String { path(Self.frameLogName(id)) }
    public func timestamps(_ id: String) -> String { path(Self.timestampsName(id)) }
    public func sensor(_ id: String) -> String { path(Self.sensorName(id)) }

    /// A file of the session by its name.
    public func path(_ name: String) -> String { "\(directory)/\(name)" }
}
