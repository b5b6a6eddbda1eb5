import SyncField

extension JSONValue {
    /// Why a text is not one JSON value: where it stopped making sense (1-based byte column),
    /// and how.
    public struct ParseError: Error, Equatable, Sendable {
        public var column: Int
        public var message: String
    }

    /// The value of a JSON text; nil when it is not one (RFC 8259, strict: the whole text is one
    /// value, whitespace around it allowed).
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        try? JSONValue(parsing: bytes)
    }

    /// The value of a JSON text, or why it is not one (`parse`, for readers that say why).
    ///
    /// A number becomes the kind its spelling says: `integer` when it is an integer that fits an
    /// `Int64` (`-0` is 0), `unsigned` when it fits a `UInt64` only, else `double` (`1.0`,
    /// `1e3`, and integers beyond `UInt64`, rounded). An object that repeats a key keeps the last.
    public init(parsing bytes: some Collection<UInt8>) throws(ParseError) {
        do {
            self = Self.value(try JSONTextParser.parse(bytes))
        } catch {
            throw ParseError(column: error.column, message: error.message)
        }
    }

    /// A value the SDK's parser read (numbers as `init(parsing:)` reads them).
    public init(_ parsed: ParsedJSON) { self = Self.value(parsed) }

    private static func value(_ parsed: ParsedJSON) -> JSONValue {
        switch parsed {
        case .object(let members):
            var object: [String: JSONValue] = [:]
            object.reserveCapacity(members.count)
            for member in members { object[member.key] = value(member.value) }
            return .object(object)
        case .array(let items): return .array(items.map(value))
        case .string(let text): return .string(text)
        case .bool(let flag): return .bool(flag)
        case .null: return .null
        case .number(let spelling):
            if let integer = Int64(spelling) { return .integer(integer) }
            if let unsigned = UInt64(spelling) { return .unsigned(unsigned) }
            // The parser let only JSON's number syntax through, which Double's parser takes.
            return .double(Double(spelling) ?? 0)
        }
    }
}
