import FieldcapArchive
import FieldcapCore
import FieldcapPreview
import FieldcapRig
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import SyncField

// The API's JSON bodies, as openapi.yaml describes them. Keys are written snake_case
// (`JSONBody`): `elapsedS` is `elapsed_s`.

struct HealthBody: Encodable {
    var status: String
    var timestamp: String
    var uptime: Double
}

struct RigBody: Encodable {
    var hostId: String
    var root: String
    var recording: String?
    var devices: [DeviceBody]
    var storage: StorageBody
    var settings: SettingsBody
}

struct DeviceBody: Encodable {
    var id: String
    var kind: String
    var device: String
    var options: [String: String]
    var granted: JSONValue
    var summary: String
    var timeSource: String
    /// Cameras: where to watch them, or why they cannot be watched.
    var preview: PreviewBody?

    init(_ device: RigService.Device, previews: Previews) {
        id = device.id
        kind = device.kind
        self.device = device.device
        options = device.options
        granted = device.granted
        summary = device.summary
        timeSource = device.timeSource
        if let stream = previews.streams[device.id] {
            let statistics = stream.statistics
            preview = PreviewBody(
                jpg: "/api/v1/preview/\(device.id).jpg", mjpg: "/api/v1/preview/\(device.id).mjpg",
                maxRate: stream.maxRate, viewers: statistics.viewers, framesEncoded: statistics.framesEncoded,
                meanEncodeMs: statistics.meanEncodeSeconds * 1000, error: statistics.failure,
                facesCovered: stream.faces.map { _ in
                    FacesCoveredBody(
                        frames: statistics.faces?.frames ?? 0, framesCovered: statistics.faces?.framesCovered ?? 0,
                        boxesCovered: statistics.faces?.boxesCovered ?? 0)
                })
        } else if let why = previews.unavailable[device.id] {
            preview = PreviewBody(unavailable: why)
        }
    }
}

struct PreviewBody: Encodable {
    var jpg: String?
    var mjpg: String?
    var maxRate: Double?
    var viewers: Int?
    /// Frames encoded since the service started, and the mean time one took.
    var framesEncoded: UInt64?
    var meanEncodeMs: Double?
    /// The last encoding error, if frames failed.
    var error: String?
    var unavailable: String?
    /// Set when the preview covers faces: what it covered so far.
    var facesCovered: FacesCoveredBody?
}

struct FacesCoveredBody: Encodable {
    var frames: Int
    var framesCovered: Int
    var boxesCovered: Int
}

struct StorageBody: Encodable {
    var freeBytes: UInt64?
    var usedBytes: UInt64
    var maxStorageBytes: UInt64?
    var minFreeBytes: UInt64
}

struct SettingsBody: Encodable {
    var durationS: Double?
    var segmentS: Double?
    var keepS: Double?
    var syncEveryS: Double
}

struct StartedBody: Encodable {
    var name: String
    var directory: String
}

/// `/api/v1/status` and the events' `status`: the figures of the terminal's status line.
struct StatusBody: Encodable {
    struct Recording: Encodable {
        var name: String
        var directory: String
        var elapsedS: Double?
        var streams: [StreamBody]
        var bytes: UInt64?
        var diskFreeBytes: UInt64?
        var diskStalls: [StallBody]
        /// Marks taken on it, and what the user last had to hear about them.
        var marks: Int
        var marksWarning: String?
    }

    /// `serve --server`: the capture server connection.
    struct Server: Encodable {
        var url: String?
        var state: String
        var name: String
        var lastError: String?
        var seen: [String]
        var connections: Int
        var commands: Int
        var uploads: Int
        var uploadFailures: Int
        var lastUploadFailure: String?
        var uploadsPending: Int
        var lastCommand: String?
    }

    /// A fleet's start waiting for its instant: `POST /api/v1/recording/stop` calls it off.
    struct Scheduled: Encodable {
        var atUtc: String
        var captureId: String?
    }

    var state: String
    var recording: Recording?
    var scheduled: Scheduled?
    var last: StoppedBody?
    var server: Server?
    /// Each captured stream's device clock mapping into CLOCK_MONOTONIC_RAW, by stream id:
    /// absent when nothing is captured, or every stream is stamped in RAW itself.
    var clocks: [String: ClockBody]?

    init(_ status: RigStatus) {
        state = status.state
        if !status.clocks.isEmpty {
            clocks = Dictionary(status.clocks.map { ($0.id, ClockBody($0.health)) }, uniquingKeysWith: { a, _ in a })
        }
        scheduled = status.scheduled.map {
            Scheduled(atUtc: SyncPoint.isoDatetime(wallClockNs: $0.atNs), captureId: $0.captureId)
        }
        last = status.last.map(StoppedBody.init)
        server = status.server.map { link in
            Server(
                url: link.url, state: link.state.rawValue, name: link.name, lastError: link.lastError, seen: link.seen,
                connections: link.connections, commands: link.commands, uploads: link.uploads,
                uploadFailures: link.uploadFailures, lastUploadFailure: link.lastUploadFailure,
                uploadsPending: link.uploadsPending, lastCommand: link.lastCommand)
        }
        recording = status.recording.map { directory in
            Recording(
                name: PathName.base(of: directory), directory: directory,
                elapsedS: status.status?.elapsed, streams: status.status?.streams.map(StreamBody.init) ?? [],
                bytes: status.status?.bytes, diskFreeBytes: status.status?.diskFree,
                diskStalls: status.status?.stalls.map(StallBody.init) ?? [], marks: status.marks,
                marksWarning: status.marksWarning)
        }
    }
}

struct StreamBody: Encodable {
    var id: String
    var written: Int
    var queued: Int
    /// Every record lost, `encoderDropped` among them.
    var dropped: Int
    var encoderDropped: Int
    var rate: Double
    var deviceGaps: Int?
    /// The stream's device is away (unplugged) now; nil for streams that do not wait for theirs.
    var away: Bool?
    /// Times its device went away so far.
    var timesAway: Int?

    init(_ stream: RecordingStatus.Stream) {
        id = stream.id
        written = stream.written
        queued = stream.queued
        dropped = stream.dropped
        encoderDropped = stream.encoderDropped
        rate = stream.rate
        deviceGaps = stream.deviceGaps
        away = stream.away
        timesAway = stream.timesAway
    }
}

/// A `ClockHealth` as the status (`clocks`) and Foxglove's `/fieldcap/clock` give it.
struct ClockBody: Encodable {
    var from: String
    var offsetNs: Int64
    var bracketNs: Int64
    var driftPpm: Double?
    var worstUncertaintyNs: Int64
    var pairs: Int
    var pairsRefused: Int
    var steps: Int
    var rateChanges: Int
    /// Seconds since it was taken (it is taken at most once a second, at a dequeue).
    var ageS: Double

    init(_ health: ClockHealth) {
        from = health.from
        offsetNs = health.offsetNs
        bracketNs = health.bracketNs
        driftPpm = health.driftPPM.flatMap { $0.isFinite ? $0 : nil }
        worstUncertaintyNs = health.worstUncertaintyNs
        pairs = health.pairs
        pairsRefused = health.pairsRefused
        steps = health.steps
        rateChanges = health.rateChanges
        ageS = Double(MonotonicClock.now() &- health.atNs) / 1e9
    }
}

struct StallBody: Encodable {
    var file: String
    var operation: String
    var seconds: Double
    var ongoing: Bool

    init(_ stall: DiskWatch.Stall) {
        file = stall.file
        operation = stall.operation.rawValue
        seconds = stall.seconds
        ongoing = stall.ongoing
    }
}

struct StoppedBody: Encodable {
    struct Stream: Encodable {
        var id: String
        var written: Int
        var dropped: Int
        var encoderDropped: Int
        var endedEarly: String?
    }

    var name: String
    var directory: String
    var reason: String
    var elapsedS: Double
    var streams: [Stream]
    var error: String?

    init(_ stopped: StoppedEvent) {
        name = PathName.base(of: stopped.directory)
        directory = stopped.directory
        reason = stopped.reason
        elapsedS = stopped.elapsed
        streams = stopped.streams.map {
            Stream(
                id: $0.id, written: $0.written, dropped: $0.dropped + $0.encoderDropped,
                encoderDropped: $0.encoderDropped, endedEarly: $0.captureError)
        }
        error = stopped.error
    }
}

struct FileBody: Encodable {
    var name: String
    var bytes: UInt64
}

/// A session's catalog entry with its files.
struct SessionBody: Encodable {
    var entry: CatalogEntry
    var files: [FileBody]

    enum Keys: String, CodingKey { case files }

    func encode(to encoder: Encoder) throws {
        try entry.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(files, forKey: .files)
    }
}

/// One event on `/api/v1/events`: `{"event":"status",...}` and the others.
struct EventBody: Encodable {
    var event: RigEvent

    enum Keys: String, CodingKey {
        case event, directory, name, stream, error, freeBytes, minFreeBytes, segment, reason, node, awaySeconds
        case session, syncCheck, mark, warnings
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch event {
        case .started(let directory):
            try container.encode("started", forKey: .event)
            try container.encode(directory, forKey: .directory)
            try container.encode(PathName.base(of: directory), forKey: .name)
        case .stopped(let stopped):
            try container.encode("stopped", forKey: .event)
            try StoppedBody(stopped).encode(to: encoder)
        case .status(let status):
            try container.encode("status", forKey: .event)
            try StatusBody(status).encode(to: encoder)
        case .streamEnded(let stream, let error):
            try container.encode("stream_ended", forKey: .event)
            try container.encode(stream, forKey: .stream)
            try container.encode(error, forKey: .error)
        case .streamAway(let stream, let reason):
            try container.encode("stream_away", forKey: .event)
            try container.encode(stream, forKey: .stream)
            try container.encode(reason, forKey: .reason)
        case .streamReturned(let stream, let node, let seconds):
            try container.encode("stream_returned", forKey: .event)
            try container.encode(stream, forKey: .stream)
            try container.encode(node, forKey: .node)
            try container.encode(seconds, forKey: .awaySeconds)
        case .diskLow(let free, let minFree):
            try container.encode("disk_low", forKey: .event)
            try container.encode(free, forKey: .freeBytes)
            try container.encode(minFree, forKey: .minFreeBytes)
        case .segmentRotated(let segment):
            try container.encode("segment_rotated", forKey: .event)
            try container.encode(segment, forKey: .segment)
        case .previewUnavailable(let error):
            try container.encode("preview_unavailable", forKey: .event)
            try container.encode(error, forKey: .error)
        case .syncChecked(let checked):
            try container.encode("sync_checked", forKey: .event)
            try container.encode(checked.directory, forKey: .directory)
            try container.encode(PathName.base(of: checked.directory), forKey: .name)
            try container.encodeIfPresent(checked.session, forKey: .session)
            try container.encodeIfPresent(checked.entry?.json, forKey: .syncCheck)
            try container.encodeIfPresent(checked.error, forKey: .error)
        case .marked(let mark, let warnings):
            try container.encode("marked", forKey: .event)
            try container.encode(mark, forKey: .mark)
            try container.encode(warnings, forKey: .warnings)
        case .markGivenUp(let mark, let reason):
            try container.encode("mark_given_up", forKey: .event)
            try container.encode(mark, forKey: .mark)
            try container.encode(reason, forKey: .reason)
        }
    }
}

/// `POST /api/v1/recording/start`'s optional body: `duration`, `segment`, `keep` as seconds or
/// as text (`"10s"`, `"5m"`), `max_storage` as bytes or as text (`"16G"`).
enum StartBody {
    static let keys: Set<String> = ["duration", "segment", "max_storage", "keep", "check_sync"]

    /// A JSON number, string or boolean; anything else is kept as `other` for the error.
    enum Value: Decodable {
        case number(Double)
        case text(String)
        case flag(Bool)
        case other

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Double.self) {
                self = .number(number)
            } else if let text = try? container.decode(String.self) {
                self = .text(text)
            } else if let flag = try? container.decode(Bool.self) {
                self = .flag(flag)
            } else {
                self = .other
            }
        }
    }

    static func parse(_ data: Data) throws -> RigService.StartRequest {
        var request = RigService.StartRequest()
        if data.allSatisfy({ [0x20, 0x0A, 0x0D, 0x09].contains($0) }) { return request }
        guard let object = try? JSONDecoder().decode([String: Value].self, from: data) else {
            throw APIError(.badRequest, "the body must be a JSON object, like {\"duration\":\"10s\"}, or empty")
        }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw APIError(
                .badRequest,
                "unknown field '\(unknown.printable)': the start request takes \(keys.sorted().joined(separator: ", "))"
            )
        }
        request.duration = try span(object["duration"], "duration", example: "10s")
        request.segment = try span(object["segment"], "segment", example: "30s")
        request.keep = try span(object["keep"], "keep", example: "2h")
        switch object["max_storage"] {
        case nil: break
        case .number(let bytes) where bytes > 0 && bytes < 1e18 && bytes == bytes.rounded():
            request.maxStorage = ByteSize(bytes: UInt64(bytes))
        case .text(let text) where ByteSize(text).map { $0.bytes > 0 } == true:
            request.maxStorage = ByteSize(text)
        default:
            throw APIError(.badRequest, "max_storage must be bytes above 0 or a size like \"16G\"")
        }
        switch object["check_sync"] {
        case nil: break
        case .flag(let check): request.checkSync = check
        default: throw APIError(.badRequest, "check_sync must be true or false")
        }
        return request
    }

    private static func span(_ value: Value?, _ name: String, example: String) throws -> TimeSpan? {
        switch value {
        case nil: return nil
        case .number(let seconds) where seconds > 0 && seconds <= 7 * 24 * 3600:
            return TimeSpan(seconds: seconds)
        case .text(let text) where TimeSpan(text) != nil:
            return TimeSpan(text)
        default:
            throw APIError(.badRequest, "\(name) must be seconds above 0 or a duration like \"\(example)\"")
        }
    }
}
