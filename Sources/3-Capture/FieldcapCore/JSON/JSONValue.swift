import SyncField

/// A JSON value, typed: fieldcap's one JSON value outside the SDK. What a source reports about
/// itself (`SourceReport`), what the sidecar (`fieldcap.json`), the `--json` lines and the
/// protocols' messages hold, and what fieldcap reads back (`parse`). A number keeps the kind its
/// spelling or its Swift type gave it (`integer`, `unsigned` beyond `Int64`, `double`), and is
/// written back as it came (`compactText`).
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

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// The elements of an array, each as `element` reads it; nil unless every one reads (as
    /// Swift's `as? [String]` casts a whole array or nothing).
    public func arrayValue<Element>(of element: (JSONValue) -> Element?) -> [Element]? {
        guard case .array(let values) = self else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let converted = element(value) else { return nil }
            elements.append(converted)
        }
        return elements
    }

    public var isNull: Bool { self == .null }

    // The numbers, whatever case holds them: a reader that wants a number takes it as the text
    // spelled it (`1`, `18446744073709551615` or `1.0`). Never a boolean.

    /// Any number, as a `Double` (rounded where the integer has more digits than it holds).
    public var doubleValue: Double? {
        switch self {
        case .integer(let number): return Double(number)
        case .unsigned(let number): return Double(number)
        case .double(let number): return number
        default: return nil
        }
    }

    /// A whole number that fits an `Int` (a `.double` only when it is whole).
    public var intValue: Int? {
        switch self {
        case .integer(let number): return Int(exactly: number)
        case .unsigned(let number): return Int(exactly: number)
        case .double(let number): return Int(exactly: number)
        default: return nil
        }
    }

    /// A whole number that fits an `Int64` (a `.double` only when it is whole).
    public var int64Value: Int64? {
        switch self {
        case .integer(let number): return number
        case .unsigned(let number): return Int64(exactly: number)
        case .double(let number): return Int64(exactly: number)
        default: return nil
        }
    }

    /// A whole number from 0 to `UInt64.max` (a `.double` only when it is whole).
    public var uint64Value: UInt64? {
        switch self {
        case .integer(let number): return UInt64(exactly: number)
        case .unsigned(let number): return number
        case .double(let number): return UInt64(exactly: number)
        default: return nil
        }
    }

    // The integers as a parsed text spelled them, for readers of the SDK's lines, whose
    // `capture_ns` and `frame_number` are integers or wrong: `5.0` or `5e0` is not one.

    /// An integer spelled without fraction or exponent that fits an `Int64` (`.integer`).
    public var integerValue: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }

    /// A non-negative integer spelled without fraction or exponent (`.integer` from 0, or
    /// `.unsigned`).
    public var unsignedValue: UInt64? {
        switch self {
        case .integer(let number): return UInt64(exactly: number)
        case .unsigned(let number): return number
        default: return nil
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
    public init(_ value: Int64) { self = .integer(value) }
    public init(_ value: UInt64) { self = .unsigned(value) }
    public init(_ value: Double) { self = .double(value) }
    public init(_ value: String) { self = .string(value) }
    public init(_ value: String?) { self = value.map { .string($0) } ?? .null }
    public init(_ value: Bool) { self = .bool(value) }
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
