import SyncField

/// A JSON value built in Swift, typed: what a source reports about itself (`SourceReport`), and
/// what the sidecar (`fieldcap.json`) and `--json` lines hold.
public indirect enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// An object's member, or nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The same value as plain Swift values (`[String: Any]`, `[Any]`, numbers, strings; `null`
    /// as an `Optional<Any>.none`), for writers that take those.
    public var plain: Any {
        switch self {
        case .null: return Optional<Any>.none as Any
        case .bool(let value): return value
        case .integer(let value): return value
        case .unsigned(let value): return value
        case .double(let value): return value
        case .string(let value): return value
        case .array(let values): return values.map(\.plain)
        case .object(let members): return members.mapValues(\.plain)
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }

    public init(_ value: Int) { self = .integer(Int64(value)) }
    public init(_ value: UInt64) { self = .unsigned(value) }
    public init(_ value: Double) { self = .double(value) }
    public init(_ value: String) { self = .string(value) }
    public init(_ value: String?) { self = value.map { .string($0) } ?? .null }
}

extension JSONValue: Encodable {
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .unsigned(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let values): try container.encode(values)
        case .object(let members): try container.encode(members)
        }
    }
}
