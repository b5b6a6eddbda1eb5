import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// What a root holds: every session and segmented recording directly under it, read from their
/// sidecars, manifests and indexes (never their timestamp files or videos), so a root with
/// thousands of segments lists at once. A directory with neither a sidecar nor an index is listed
/// as not fieldcap's.
public enum SessionCatalog {
    /// Every directory under `root`, newest first (by start; ones with no known start last, by name).
    /// A symbolic link is not one, wherever it leads: listing, archiving or deleting through it
    /// would reach outside the root.
    public static func entries(root: String) throws -> [CatalogEntry] {
        let names = try FileManager.default.contentsOfDirectory(atPath: root)
        var entries: [CatalogEntry] = []
        for name in names where !name.hasPrefix(".") {
            var isDirectory = false
            let path = "\(root)/\(name)"
            guard !isSymbolicLink(path), FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory),
                isDirectory
            else { continue }
            entries.append(entry(directory: path, name: name))
        }
        return entries.sorted { a, b in
            switch (a.startNs, b.startNs) {
            case (let x?, let y?) where x != y: x > y
            case (.some, nil): true
            case (nil, .some): false
            default: a.name < b.name
            }
        }
    }

    /// Whether `path` itself is a symbolic link (not what it leads to).
    public static func isSymbolicLink(_ path: String) -> Bool { PathName.isSymbolicLink(path) }

    /// The newest session or recording under `root` whose span overlaps [fromNs, toNs) (UTC
    /// nanoseconds), where a range with no session named is looked for.
    public static func newest(overlapping fromNs: UInt64, _ toNs: UInt64, root: String) throws -> CatalogEntry? {
        try entries(root: root).first { entry in
            guard entry.kind != .foreign, let start = entry.startNs else { return false }
            return start < toNs && (entry.endNs ?? .max) > fromNs
        }
    }

    /// The entry for one directory: a recording (it has `recording.json`), a session (it has
    /// `fieldcap.json`) or not fieldcap's.
    public static func entry(directory: String, name: String) -> CatalogEntry {
        if let index = RecordingIndex.read(directory: directory) {
            return recording(index, directory: directory, name: name)
        }
        if let sidecar = Sidecar.Contents(layout: SessionLayout(directory: directory)) {
            return session(sidecar, directory: directory, name: name)
        }
        return CatalogEntry(
            name: name, path: directory, kind: .foreign, state: .foreign, bytes: SessionFiles.bytesOnDisk(directory))
    }

    static func session(_ sidecar: Sidecar.Contents, directory: String, name: String) -> CatalogEntry {
        var entry = CatalogEntry(
            name: name, path: directory, kind: .session,
            state: liveState(sidecar.state == "recording", directory: directory),
            bytes: SessionFiles.bytesOnDisk(directory))
        if sidecar.state != "complete" && sidecar.state != "recording" { entry.note = sidecar.state }
        if let reason = sidecar.stopReason, entry.note == nil { entry.note = note(stopReason: reason) }
        entry.startNs = sidecar.startedUtc.flatMap(UTCTime.parse) ?? sidecar.syncPoint.wallClockNs
        entry.endNs = sidecar.stoppedUtc.flatMap(UTCTime.parse)
        let counts = frameCounts(directory: directory)
        entry.streams = sidecar.streams.map { stream in
            CatalogEntry.Stream(
                id: stream.id, kind: stream.kind, format: stream.format?.description,
                records: counts?[stream.id])
        }
        entry.syncCheck = syncCheck(sidecar)
        let marks = MarkLine.marks(inDirectory: directory)
        entry.marks = marks.isEmpty ? nil : marks
        return entry
    }

    /// The sidecar's `sync_check` (`fieldcap check-sync --save`), when it reads as fieldcap
    /// writes it: a damaged one is left out here, and `validate` names it.
    static func syncCheck(_ sidecar: Sidecar.Contents) -> SyncCheckEntry? {
        guard let value = sidecar.document[SyncCheckEntry.member] else { return nil }
        return try? SyncCheckEntry(json: value, streams: Set(sidecar.streams.map(\.id)))
    }

    static func recording(_ index: RecordingIndex, directory: String, name: String) -> CatalogEntry {
        let present = index.presentSegments
        var entry = CatalogEntry(
            name: name, path: directory, kind: .recording,
            state: liveState(index.state == "recording", directory: directory), bytes: 0)
        if index.state != "complete" && index.state != "recording" { entry.note = index.state }
        if let reason = index.stopReason, entry.note == nil { entry.note = note(stopReason: reason) }
        entry.segments = present.count
        entry.segmentsDeleted = index.segments.count - present.count
        entry.startNs = present.first.flatMap { UTCTime.parse($0.startUtc) }
        // A finished segment's end is its last record's time; the one being written ends now.
        entry.endNs = present.last.flatMap { last in
            last.state == .recording ? nil : endNs(of: last) ?? UTCTime.parse(last.endUtc)
        }
        if entry.state == .recording { entry.endNs = UInt64(Date().timeIntervalSince1970 * 1e9) }
        var bytes = SessionFiles.bytesOnDisk(directory)
        for segment in present {
            bytes += segment.bytes ?? SessionFiles.bytesOnDisk("\(directory)/\(segment.directory)")
        }
        entry.bytes = bytes
        entry.streams = index.streams.map { stream in
            let records = present.reduce(0) { $0 + ($1.streams?[stream.id]?.records ?? 0) }
            return CatalogEntry.Stream(id: stream.id, kind: stream.kind, format: stream.format, records: records)
        }
        // A recording's check is of its first segment (`serve --check-sync`): one sidecar read.
        if let first = present.first(where: { $0.state != .recording }),
            let sidecar = Sidecar.Contents(layout: SessionLayout(directory: "\(directory)/\(first.directory)"))
        {
            entry.syncCheck = syncCheck(sidecar)
        }
        entry.marks = index.marks
        return entry
    }

    /// Each stream's `frame_count` in the session's manifest (written as it finished).
    static func frameCounts(directory: String) -> [String: Int]? {
        guard let data = FileManager.default.contents(atPath: SessionLayout(directory: directory).manifest),
            let streams = JSONValue.parse(data)?["streams"]?.objectValue
        else { return nil }
        return streams.compactMapValues { $0["frame_count"]?.intValue }
    }

    /// When a finished segment's last record was captured, in UTC: its end as scheduled when it
    /// ran to its boundary, earlier when the recording stopped inside it.
    static func endNs(of segment: RecordingIndex.Segment) -> UInt64? {
        guard let start = UTCTime.parse(segment.startUtc),
            let last = segment.streams?.values.compactMap(\.lastCaptureNs).max()
        else { return nil }
        let scheduled = segment.endMonotonicRawNs
        let lastRaw = min(last, scheduled)
        return SpanArithmetic.add(start, lastRaw, minus: segment.startMonotonicRawNs)
    }

    /// What a stop's reason adds to `complete`: nothing for a recording that ran its duration.
    static func note(stopReason: String) -> String? {
        switch stopReason {
        case "duration": nil
        case "extract": "extract"
        default: "stopped by \(stopReason)"
        }
    }

    /// `recording` while a fieldcap holds the directory, `needs recover` when none does.
    static func liveState(_ unfinished: Bool, directory: String) -> CatalogEntry.State {
        guard unfinished else { return .complete }
        return RecordingLock.isHeld(directory: directory) ? .recording : .needsRecover
    }
}

/// One line of `fieldcap sessions`.
public struct CatalogEntry: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case session, recording
        case foreign = "not fieldcap's"
    }

    public enum State: String, Codable, Sendable {
        case complete, recording
        case needsRecover = "needs recover"
        case foreign = "not fieldcap's"
    }

    public struct Stream: Codable, Sendable, Equatable {
        public var id: String
        public var kind: String
        /// Video streams: `640x480 YUYV`.
        public var format: String?
        /// Frames or samples (timestamp lines) written; nil while unknown (being recorded, or
        /// waiting for `fieldcap recover`).
        public var records: Int?
    }

    public var name: String
    public var path: String
    public var kind: Kind
    public var state: State
    /// What else the state is: `recovered`, `stopped: disk full ...`, `stopped by SIGINT`.
    public var note: String?
    /// Wall-clock start and end (nanoseconds since the epoch).
    public var startNs: UInt64?
    public var endNs: UInt64?
    public var bytes: UInt64
    public var streams: [Stream] = []
    /// Recordings: segments on disk, and deleted (by the budget or `sessions rm`).
    public var segments: Int?
    public var segmentsDeleted: Int?
    /// The camera–IMU offsets measured in it (`check-sync --save`; a recording's first segment).
    /// Written, not read back by `init(from:)`.
    public var syncCheck: SyncCheckEntry?
    /// The moments marked on it (`fieldcap mark`), in the order taken.
    public var marks: [Mark]?

    public var startUtc: String? { startNs.map { SyncPoint.isoDatetime(wallClockNs: $0) } }
    public var endUtc: String? { endNs.map { SyncPoint.isoDatetime(wallClockNs: $0) } }
    public var durationSeconds: Double? {
        guard let startNs, let endNs, endNs >= startNs else { return nil }
        return Double(endNs - startNs) / 1e9
    }

    init(name: String, path: String, kind: Kind, state: State, bytes: UInt64) {
        self.name = name
        self.path = path
        self.kind = kind
        self.state = state
        self.bytes = bytes
    }

    enum CodingKeys: String, CodingKey {
        case name, path, kind, state, note, startUtc = "start_utc", endUtc = "end_utc"
        case durationSeconds = "duration_seconds", bytes, streams, segments
        case segmentsDeleted = "segments_deleted"
        case syncCheck = "sync_check"
        case marks
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(path, forKey: .path)
        try container.encode(kind, forKey: .kind)
        try container.encode(state, forKey: .state)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encodeIfPresent(startUtc, forKey: .startUtc)
        try container.encodeIfPresent(endUtc, forKey: .endUtc)
        try container.encodeIfPresent(durationSeconds, forKey: .durationSeconds)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(streams, forKey: .streams)
        try container.encodeIfPresent(segments, forKey: .segments)
        try container.encodeIfPresent(segmentsDeleted, forKey: .segmentsDeleted)
        try container.encodeIfPresent(syncCheck?.json, forKey: .syncCheck)
        try container.encodeIfPresent(marks, forKey: .marks)
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        path = try container.decode(String.self, forKey: .path)
        kind = try container.decode(Kind.self, forKey: .kind)
        state = try container.decode(State.self, forKey: .state)
        note = try container.decodeIfPresent(String.self, forKey: .note)
        startNs = try container.decodeIfPresent(String.self, forKey: .startUtc).flatMap(UTCTime.parse)
        endNs = try container.decodeIfPresent(String.self, forKey: .endUtc).flatMap(UTCTime.parse)
        bytes = try container.decode(UInt64.self, forKey: .bytes)
        streams = try container.decode([Stream].self, forKey: .streams)
        segments = try container.decodeIfPresent(Int.self, forKey: .segments)
        segmentsDeleted = try container.decodeIfPresent(Int.self, forKey: .segmentsDeleted)
        marks = try container.decodeIfPresent([Mark].self, forKey: .marks)
    }
}
