import SyncField
import Synchronization

/// The hand-off of a fed stream's records (`--sensor feed:`, gpsd) from its writer to live
/// viewers: while nobody watches, one atomic load a record; while someone does, the record's
/// channels as JSON into a bounded list the viewers' thread empties, which drops its oldest when
/// full, for the viewers alone. A fed record is any shape, so it cannot cross in a fixed
/// `CaptureRecord` as a sensor's does; it is converted on the feed's own writer thread, which
/// no other stream waits for.
///
/// Thread-safe: `offer` from the stream's writer thread, `drain` from one reader thread.
public final class FeedTap: Sendable {
    public struct Record: Sendable, Equatable {
        public var captureNs: UInt64
        public var sequence: UInt64
        public var channels: JSONValue
    }

    public let streamId: String
    public let capacity: Int
    private let pending = Mutex<(records: [Record], dropped: Int)>(([], 0))
    private let watching = Atomic<Bool>(false)

    public init(streamId: String, capacity: Int = 1024) {
        self.streamId = streamId
        self.capacity = capacity
    }

    /// Whether the writer hands records over: set by the reader while it has viewers.
    public var watched: Bool {
        get { watching.load(ordering: .relaxed) }
        set { watching.store(newValue, ordering: .relaxed) }
    }

    /// Writer thread: hands the record's channels over if anyone watches.
    @inline(__always)
    public func offer(_ record: CaptureRecord, channels: @autoclosure () -> [String: ChannelValue]?) {
        guard watching.load(ordering: .relaxed), let channels = channels() else { return }
        let entry = Record(
            captureNs: record.captureNs, sequence: record.sequence, channels: JSONValue(channels: channels))
        pending.withLock { pending in
            if pending.records.count >= capacity {
                pending.records.removeFirst()
                pending.dropped += 1
            }
            pending.records.append(entry)
        }
    }

    /// Reader thread: every record waiting, oldest first.
    public func drain() -> [Record] {
        pending.withLock { pending in
            defer { pending.records = [] }
            return pending.records
        }
    }

    /// Records the viewers lost because their thread was behind (the recording lost none).
    public var dropped: Int { pending.withLock { $0.dropped } }
}

extension JSONValue {
    /// A fed record's channels (what the program sent, as `FeedValues` holds them: numbers,
    /// strings, booleans, null, nested objects and arrays) as JSON.
    public init(channels: [String: ChannelValue]) {
        self = .object(channels.mapValues { JSONValue(channelValue: $0) })
    }

    init(channelValue value: ChannelValue) {
        switch value {
        case let number as Double: self = number.isFinite ? .double(number) : .null
        case let number as Int: self = .integer(Int64(number))
        case let number as Int64: self = .integer(number)
        case let number as UInt64: self = .unsigned(number)
        case let flag as Bool: self = .bool(flag)
        case let text as String: self = .string(text)
        case let members as [String: ChannelValue]: self = JSONValue(channels: members)
        case let items as [ChannelValue]: self = .array(items.map { JSONValue(channelValue: $0) })
        case let json as JSONValue: self = json
        default: self = .null
        }
    }
}
