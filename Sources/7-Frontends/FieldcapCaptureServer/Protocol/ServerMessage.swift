import FieldcapCore
import FieldcapSession
import FoundationEssentials

/// What an AllSpark-style capture server sends, as its edge server (`mobile_client/server.py`)
/// does: a `clientConfig` on connecting, commands (`uploadTimeRange`, the operator page's
/// `upload`, and fieldcap's `record`), and `{"status","message"}` replies. The server
/// forwards a command's `command` and `message` only (and `startTime`/`endTime` for
/// `uploadTimeRange`). Anything else is kept as what it is, to be logged, never to end the
/// connection.
public enum ServerMessage: Equatable, Sendable {
    public struct ClientConfig: Equatable, Sendable {
        public var videoFormat: String?
        /// `videoChunkDurationMs`: the segment length.
        public var chunkDuration: TimeSpan?
        /// `videoBufferMaxMB` (MiB, as fieldcap's `M`): the storage budget.
        public var bufferMax: ByteSize?
    }

    case clientConfig(ClientConfig)
    /// `{"command":"record", "message": ...}`: until stopped. A `duration` (seconds or "10s") is
    /// taken when a server sends one; AllSpark's never does.
    case record(duration: TimeSpan?)
    /// `{"command":"upload"}`, the operator page's "Force Sync Uploads": what the server has not
    /// received yet.
    case upload
    /// `{"command":"uploadTimeRange","startTime":unix s,"endTime":unix s}`, in nanoseconds.
    case uploadTimeRange(startNs: UInt64, endNs: UInt64)
    /// `{"status":"success"|"error","message":...}`: the server's answer to an upload.
    case status(String, message: String?)
    case unknownCommand(String)
    /// Valid JSON, but not a message of the protocol, or a command with bad fields: why.
    case unusable(String)

    /// Reads one text message.
    public static func parse(_ text: String) -> ServerMessage {
        guard let object = JSONValue.parse(text.utf8)?.objectValue else {
            return .unusable("not a JSON object")
        }
        if object["type"]?.stringValue == "clientConfig" {
            guard let config = object["config"]?.objectValue else {
                return .unusable("clientConfig without a config object")
            }
            var parsed = ClientConfig()
            if let format = config["videoFormat"] {
                guard let name = format.stringValue else {
                    return .unusable("clientConfig: videoFormat is not a string")
                }
                parsed.videoFormat = name
            }
            if let value = config["videoChunkDurationMs"] {
                guard let ms = number(value), ms >= 1, let span = TimeSpan("\(ms)ms") else {
                    return .unusable(
                        "clientConfig: videoChunkDurationMs \(shown(value)) is not a duration in milliseconds")
                }
                parsed.chunkDuration = span
            }
            if let value = config["videoBufferMaxMB"] {
                guard let mb = number(value), mb > 0, mb < Double(UInt64.max >> 21) else {
                    return .unusable("clientConfig: videoBufferMaxMB \(shown(value)) is not a size in MB")
                }
                parsed.bufferMax = ByteSize(bytes: UInt64(mb * Double(1 << 20)))
            }
            return .clientConfig(parsed)
        }
        if let command = object["command"] {
            guard let name = command.stringValue else { return .unusable("command is not a string") }
            switch name {
            case "record":
                guard let value = object["duration"] else { return .record(duration: nil) }
                if let seconds = number(value), seconds > 0, let span = TimeSpan("\(seconds)s") {
                    return .record(duration: span)
                }
                if let text = value.stringValue, let span = TimeSpan(text) { return .record(duration: span) }
                return .unusable("record: duration \(shown(value)) is neither seconds nor a span like 30s")
            case "uploadTimeRange":
                guard let start = object["startTime"].flatMap(number), let end = object["endTime"].flatMap(number),
                    start >= 0, end > start, end < 1e11
                else {
                    return .unusable("uploadTimeRange needs startTime before endTime, in Unix seconds")
                }
                // Two instants a nanosecond apart in seconds can round to the same nanosecond.
                let startNs = UInt64((start * 1e9).rounded()), endNs = UInt64((end * 1e9).rounded())
                guard endNs > startNs else {
                    return .unusable("uploadTimeRange needs startTime before endTime, in Unix seconds")
                }
                return .uploadTimeRange(startNs: startNs, endNs: endNs)
            case "upload":
                return .upload
            default:
                return .unknownCommand(name)
            }
        }
        if let status = object["status"]?.stringValue {
            return .status(status, message: object["message"]?.stringValue)
        }
        return .unusable("neither a clientConfig, a command nor a status")
    }

    private static func number(_ value: JSONValue) -> Double? {
        guard let double = value.doubleValue else { return nil }
        return double.isFinite ? double : nil
    }

    /// A value the messages name, spelled as Swift printed the `[String: Any]` values these
    /// messages were read into before: a string bare, null as `JSONNull()` (the type that held
    /// it then), a container as Swift prints `[Any]` and `[String: Any]` (whose key order was
    /// the hash's; sorted here).
    static func shown(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): return text
        case .null: return "JSONNull()"
        default: return shownInside(value)
        }
    }

    private static func shownInside(_ value: JSONValue) -> String {
        switch value {
        case .null: return "FieldcapCore.JSONNull()"
        case .bool(let flag): return "\(flag)"
        case .integer(let number): return "\(number)"
        case .unsigned(let number): return "\(number)"
        case .double(let number): return "\(number)"
        case .string(let text): return text.debugDescription
        case .array(let values): return "[" + values.map(shownInside).joined(separator: ", ") + "]"
        case .object(let members):
            guard !members.isEmpty else { return "[:]" }
            let sorted = members.sorted { $0.key < $1.key }
            return "[" + sorted.map { "\($0.key.debugDescription): \(shownInside($0.value))" }.joined(separator: ", ")
                + "]"
        }
    }
}
