import FieldcapCore
import SyncField

/// One line a program sent to a feed, read: the record's channels and its own times, or why the
/// line is no record.
///
/// A line is one JSON object: `{"channels": {...}}`, with optional `capture_ns` (the program's
/// `CLOCK_MONOTONIC_RAW` at its sensor's I/O) and `uncertainty_ns`, both whole numbers. Channels
/// are what the SDK's `record()` takes: numbers, arrays and objects of them, nested. A number
/// keeps the kind its spelling gives it (`3` an integer, `3.0` and `3e0` a double), as a Swift
/// program passing the same values would, so the line written is the one the SDK writes.
public struct FeedLine {
    public var channels: [String: ChannelValue]
    public var captureNs: UInt64?
    public var uncertaintyNs: UInt64?

    /// Why a line is no record. The raw values name the sidecar's counts.
    public enum Rejection: String, CaseIterable, Sendable {
        /// Not a JSON text, or longer than a line may be.
        case notJSON = "not_json"
        /// JSON, but not an object with a `channels` object (and nothing but `capture_ns` and
        /// `uncertainty_ns` beside it), or a key given twice.
        case notRecord = "not_a_record"
        /// A channel's leaf is not a finite number (a string, a boolean, null, 1e999).
        case notNumeric = "not_numeric"
        /// `capture_ns` or `uncertainty_ns` is not a whole number from 0.
        case badTime = "bad_time"
        /// `capture_ns` before the last record's.
        case backwards
        /// `capture_ns` before the feed's socket opened (the recording's start) or after the line
        /// arrived.
        case outsideSession = "outside_session"
        /// The channels are not the ones pinned (`channels=`).
        case schema
    }

    /// A line's rejection and what exactly was wrong, for the terminal.
    public struct Problem: Error, Equatable {
        public var rejection: Rejection
        public var detail: String

        public init(_ rejection: Rejection, _ detail: String) {
            self.rejection = rejection
            self.detail = detail
        }
    }

    /// How deep channels may nest: a hand's joints are three levels, a grid two.
    public static let maximumDepth = 32

    /// Reads one line (without its newline).
    public init(parsing line: UnsafeRawBufferPointer) throws(Problem) {
        let parsed: ParsedJSON
        do { parsed = try JSONTextParser.parse(line) } catch {
            throw Problem(.notJSON, "column \(error.column): \(error.message)")
        }
        guard case .object(let members) = parsed else {
            throw Problem(.notRecord, "the line is \(parsed.typeName), not an object with \"channels\"")
        }
        var channels: [String: ChannelValue]?
        var seen: Set<String> = []
        for member in members {
            guard seen.insert(member.key).inserted else {
                throw Problem(.notRecord, "\"\(member.key.printable)\" is given twice")
            }
            switch member.key {
            case "channels":
                guard case .object(let fields) = member.value else {
                    throw Problem(.notRecord, "\"channels\" is \(member.value.typeName), not an object")
                }
                channels = try Self.object(fields, path: [], depth: 1)
            case "capture_ns": captureNs = try Self.time(member.value, "capture_ns")
            case "uncertainty_ns": uncertaintyNs = try Self.time(member.value, "uncertainty_ns")
            default:
                throw Problem(
                    .notRecord,
                    "unknown key \"\(member.key.printable)\"; a record has channels, capture_ns and uncertainty_ns")
            }
        }
        guard let channels else { throw Problem(.notRecord, "no \"channels\"") }
        self.channels = channels
    }

    private static func time(_ value: ParsedJSON, _ key: String) throws(Problem) -> UInt64 {
        guard case .number(let text) = value, let number = UInt64(text) else {
            let shown: String
            if case .number(let text) = value { shown = text } else { shown = value.typeName }
            throw Problem(.badTime, "\(key) is \(shown.printable), not a whole number of nanoseconds from 0")
        }
        return number
    }

    private static func object(
        _ members: [ParsedJSON.Member], path: [String], depth: Int
    ) throws(Problem) -> [String: ChannelValue] {
        var object: [String: ChannelValue] = [:]
        object.reserveCapacity(members.count)
        for member in members {
            let inner = path + [member.key]
            guard object[member.key] == nil else {
                throw Problem(.notRecord, "channel \(inner.joined(separator: ".").printable) is given twice")
            }
            object[member.key] = try value(member.value, path: inner, depth: depth)
        }
        return object
    }

    private static func value(_ parsed: ParsedJSON, path: [String], depth: Int) throws(Problem) -> ChannelValue {
        switch parsed {
        case .number(let text):
            if let integer = Int(text) { return integer }
            if let unsigned = UInt64(text) { return unsigned }
            guard let double = Double(text), double.isFinite else {
                throw Problem(
                    .notNumeric, "channel \(path.joined(separator: ".").printable) is \(text), beyond a double")
            }
            return double
        case .object(let members):
            guard depth < maximumDepth else {
                throw Problem(.notRecord, "channels nest deeper than \(maximumDepth) levels")
            }
            return try object(members, path: path, depth: depth + 1)
        case .array(let items):
            guard depth < maximumDepth else {
                throw Problem(.notRecord, "channels nest deeper than \(maximumDepth) levels")
            }
            var array: [ChannelValue] = []
            array.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                array.append(try value(item, path: path + [String(index)], depth: depth + 1))
            }
            return array
        case .string, .bool, .null:
            throw Problem(
                .notNumeric,
                "channel \(path.joined(separator: ".").printable) is \(parsed.typeName); channel values are numbers")
        }
    }
}

extension FeedLine {
    /// The channels' leaves as the SDK flattens them for aggregation, sorted: `gripper.width`,
    /// `joints.wrist.0`.
    public var flattenedNames: [String] {
        var names: [String] = []
        func walk(_ value: ChannelValue, _ prefix: String) {
            if let object = value as? [String: ChannelValue] {
                for (key, inner) in object { walk(inner, prefix.isEmpty ? key : "\(prefix).\(key)") }
            } else if let array = value as? [ChannelValue] {
                for (index, inner) in array.enumerated() { walk(inner, "\(prefix).\(index)") }
            } else {
                names.append(prefix)
            }
        }
        for (key, value) in channels { walk(value, key) }
        return names.sorted()
    }
}
