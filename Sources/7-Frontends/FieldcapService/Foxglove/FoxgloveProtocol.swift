import FieldcapCore
import NIOCore

/// The Foxglove WebSocket protocol, version 1 (subprotocol `foxglove.websocket.v1`,
/// foxglove/ws-protocol's docs/spec.md), as far as fieldcap serves it: the server's
/// `serverInfo`, `advertise` and `status`, its binary `messageData`, and the client's `subscribe`
/// and `unsubscribe`. Plain values and text; the connection is `FoxgloveConnection`'s.
public enum FoxgloveProtocol {
    public static let subprotocol = "foxglove.websocket.v1"
    /// The opcode of a binary `messageData`.
    public static let messageDataOpcode: UInt8 = 0x01

    /// One channel as `advertise` lists it.
    public struct Channel: Sendable, Equatable {
        public var id: UInt32
        public var topic: String
        public var encoding: String
        public var schemaName: String
        public var schema: String
        public var schemaEncoding: String?

        var json: JSONValue {
            var members: [String: JSONValue] = [
                "id": .unsigned(UInt64(id)), "topic": .string(topic), "encoding": .string(encoding),
                "schemaName": .string(schemaName), "schema": .string(schema),
            ]
            if let schemaEncoding { members["schemaEncoding"] = .string(schemaEncoding) }
            return .object(members)
        }
    }

    /// What a client asked for, or why it was not understood.
    public enum ClientMessage: Equatable, Sendable {
        case subscribe([(id: UInt32, channelId: UInt32)])
        case unsubscribe([UInt32])
        /// An operation of the protocol fieldcap does not offer (its server info says which it
        /// does): answered with a warning status.
        case unsupported(String)
        case invalid(String)

        public static func == (lhs: ClientMessage, rhs: ClientMessage) -> Bool {
            switch (lhs, rhs) {
            case (.subscribe(let a), .subscribe(let b)):
                a.map(\.id) == b.map(\.id) && a.map(\.channelId) == b.map(\.channelId)
            case (.unsubscribe(let a), .unsubscribe(let b)): a == b
            case (.unsupported(let a), .unsupported(let b)), (.invalid(let a), .invalid(let b)): a == b
            default: false
            }
        }
    }

    /// Most subscriptions one message may carry: more than any rig's channels.
    public static let maxSubscriptionsPerMessage = 1024

    /// A client's text message.
    public static func parse(_ text: some Collection<UInt8>) -> ClientMessage {
        guard let message = JSONValue.parse(text), message.objectValue != nil else {
            return .invalid("a client message must be a JSON object")
        }
        guard let op = message["op"]?.stringValue else { return .invalid("a client message needs a string \"op\"") }
        switch op {
        case "subscribe":
            guard let entries = message["subscriptions"]?.arrayValue else {
                return .invalid("subscribe needs an array \"subscriptions\"")
            }
            guard entries.count <= maxSubscriptionsPerMessage else {
                return .invalid("subscribe: at most \(maxSubscriptionsPerMessage) subscriptions a message")
            }
            var subscriptions: [(id: UInt32, channelId: UInt32)] = []
            for entry in entries {
                guard let id = uint32(entry["id"]), let channelId = uint32(entry["channelId"]) else {
                    return .invalid("subscribe: each subscription needs \"id\" and \"channelId\", integers 0 to 2^32-1")
                }
                subscriptions.append((id, channelId))
            }
            return .subscribe(subscriptions)
        case "unsubscribe":
            guard let entries = message["subscriptionIds"]?.arrayValue else {
                return .invalid("unsubscribe needs an array \"subscriptionIds\"")
            }
            guard entries.count <= maxSubscriptionsPerMessage else {
                return .invalid("unsubscribe: at most \(maxSubscriptionsPerMessage) ids a message")
            }
            var ids: [UInt32] = []
            for entry in entries {
                guard let id = uint32(entry) else {
                    return .invalid("unsubscribe: \"subscriptionIds\" holds integers 0 to 2^32-1")
                }
                ids.append(id)
            }
            return .unsubscribe(ids)
        default:
            return .unsupported(String(op.prefix(64)))
        }
    }

    private static func uint32(_ value: JSONValue?) -> UInt32? {
        guard let value, let number = value.int64Value else { return nil }
        return UInt32(exactly: number)
    }

    /// `serverInfo`: no optional capability (clients cannot publish, set parameters or call
    /// services); `sessionId` changes with each start of the server, so a client can tell a
    /// reconnection from a new rig process.
    public static func serverInfo(name: String, sessionId: String, metadata: [String: String]) -> String {
        text(
            .object([
                "op": "serverInfo", "name": .string(name), "capabilities": .array([]),
                "sessionId": .string(sessionId), "metadata": .object(metadata.mapValues { .string($0) }),
            ]))
    }

    public static func advertise(_ channels: [Channel]) -> String {
        text(.object(["op": "advertise", "channels": .array(channels.map(\.json))]))
    }

    public enum Level: Int64 { case info = 0, warning = 1, error = 2 }

    public static func status(_ level: Level, _ message: String) -> String {
        text(.object(["op": "status", "level": .integer(level.rawValue), "message": .string(message)]))
    }

    /// `messageData`: opcode, subscription id, the message's time (UTC, in nanoseconds), payload.
    public static func messageData(
        subscription: UInt32, logTimeNs: UInt64, payload: some Collection<UInt8>
    )
        -> ByteBuffer
    {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(13 + payload.count)
        buffer.writeInteger(messageDataOpcode)
        buffer.writeInteger(subscription, endianness: .little)
        buffer.writeInteger(logTimeNs, endianness: .little)
        buffer.writeBytes(payload)
        return buffer
    }

    static func text(_ value: JSONValue) -> String {
        // Strings and integers only, never a non-finite number: the text always exists.
        value.compactText(escapingSlashes: false) ?? "{}"
    }
}
