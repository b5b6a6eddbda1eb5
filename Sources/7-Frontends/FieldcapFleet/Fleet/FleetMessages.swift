import FoundationEssentials

/// The fleet's topics, under `fieldcap/fleet/NAME/`: one command topic every rig listens to,
/// and each rig's own presence (retained; the will says offline), status (retained) and
/// replies. Any MQTT client can send the commands (`mosquitto_pub`), and read the rest.
public struct FleetTopics: Sendable, Equatable {
    public var fleet: String

    public init(fleet: String) { self.fleet = fleet }

    public var prefix: String { "fieldcap/fleet/\(fleet)" }
    public var command: String { "\(prefix)/command" }
    public func presence(_ host: String) -> String { "\(prefix)/rigs/\(host)/presence" }
    public func status(_ host: String) -> String { "\(prefix)/rigs/\(host)/status" }
    public func reply(_ host: String) -> String { "\(prefix)/rigs/\(host)/reply" }
    /// Every rig's `kind` (presence, status, reply).
    public func everyRig(_ kind: String) -> String { "\(prefix)/rigs/+/\(kind)" }

    /// The host of a rig's topic, and which kind it is.
    public func rig(of topic: String) -> (host: String, kind: String)? {
        let parts = topic.split(separator: "/", omittingEmptySubsequences: false)
        let base = prefix.split(separator: "/").count
        guard parts.count == base + 3, topic.hasPrefix(prefix + "/rigs/") else { return nil }
        return (String(parts[base + 1]), String(parts[base + 2]))
    }

    /// A fleet name is one topic level: no '/', '+', '#', not empty.
    public static func problem(with fleet: String) -> String? {
        if fleet.isEmpty { return "it is empty" }
        if fleet.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) {
            return "it contains '/', '+' or '#', which MQTT topics reserve"
        }
        return nil
    }
}

/// `{"command": "start", "capture_id": "lab-0412", "at_wall_clock_ns": 1795737600000000000}`:
/// every rig starts recording at that instant of its own wall clock; `stop` stops them the same
/// way (`at_wall_clock_ns` may be omitted: at once). `{"command": "mark", "capture_id":
/// "mark-...", "label": "near-miss", "at_wall_clock_ns": ...}` marks that instant on every rig's
/// recording (`note`, `before` and `after` seconds optional); its capture id only names the
/// command in the replies.
public struct FleetCommand: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable { case start, stop, mark }

    public var command: Kind
    public var captureId: String
    public var atWallClockNs: UInt64?
    /// A mark's.
    public var label: String?
    public var note: String?
    public var before: Double?
    public var after: Double?

    public init(command: Kind, captureId: String, atWallClockNs: UInt64?) {
        self.command = command
        self.captureId = captureId
        self.atWallClockNs = atWallClockNs
    }

    enum CodingKeys: String, CodingKey {
        case command
        case captureId = "capture_id"
        case atWallClockNs = "at_wall_clock_ns"
        case label, note, before, after
    }
}

/// A rig's answer to a command, on its reply topic: `started` (with its session and how late
/// its sync point was against the instant), `stopped`, `missed` (the instant had passed when the
/// command came: the capture goes on without this rig), or `failed` (with why).
public struct FleetReply: Codable, Equatable, Sendable {
    public enum Result: String, Codable, Sendable { case started, stopped, missed, failed, marked }

    public var host: String
    public var command: FleetCommand.Kind
    public var captureId: String
    public var result: Result
    public var detail: String?
    public var session: String?
    /// The sync point's wall clock minus the instant asked for (started).
    public var lateByNs: Int64?

    public init(
        host: String, command: FleetCommand.Kind, captureId: String, result: Result, detail: String? = nil,
        session: String? = nil, lateByNs: Int64? = nil
    ) {
        self.host = host
        self.command = command
        self.captureId = captureId
        self.result = result
        self.detail = detail
        self.session = session
        self.lateByNs = lateByNs
    }

    enum CodingKeys: String, CodingKey {
        case host, command, result, detail, session
        case captureId = "capture_id"
        case lateByNs = "late_by_ns"
    }
}

/// A rig's retained presence: `online` while connected, `offline` when it said goodbye or (its
/// will) when its connection was lost.
public struct FleetPresence: Codable, Equatable, Sendable {
    public var host: String
    public var state: String
    public var version: String?

    public init(host: String, state: String, version: String? = nil) {
        self.host = host
        self.state = state
        self.version = version
    }
}

/// A rig's retained status, refreshed every few seconds: recording or not, the capture, each
/// stream's rate, records and drops, the disk's free bytes.
public struct FleetStatus: Codable, Equatable, Sendable {
    public struct Stream: Codable, Equatable, Sendable {
        public var id: String
        public var rate: Double
        public var written: UInt64
        public var dropped: UInt64
        /// Its device is away (unplugged) and waited for; nil from rigs that do not say.
        public var away: Bool?

        public init(id: String, rate: Double, written: UInt64, dropped: UInt64, away: Bool? = nil) {
            self.id = id
            self.rate = rate
            self.written = written
            self.dropped = dropped
            self.away = away
        }
    }

    public var host: String
    public var state: String
    public var captureId: String?
    public var session: String?
    public var streams: [Stream]
    public var freeBytes: UInt64?

    public init(
        host: String, state: String, captureId: String? = nil, session: String? = nil, streams: [Stream] = [],
        freeBytes: UInt64? = nil
    ) {
        self.host = host
        self.state = state
        self.captureId = captureId
        self.session = session
        self.streams = streams
        self.freeBytes = freeBytes
    }

    enum CodingKeys: String, CodingKey {
        case host, state, session, streams
        case captureId = "capture_id"
        case freeBytes = "free_bytes"
    }
}

enum FleetJSON {
    static func encode(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(value))) ?? []
    }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}
