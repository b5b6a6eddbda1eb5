/// JSON as it was written: object members in file order and numbers as their spelling, so a
/// validator can check order and spelling, not just values.
public indirect enum ParsedJSON: Equatable, Sendable {
    case object([Member])
    case array([ParsedJSON])
    case string(String)
    /// A number, exactly as spelled in the text.
    case number(String)
    case bool(Bool)
    case null

    public struct Member: Equatable, Sendable {
        public var key: String
        public var value: ParsedJSON
    }

    public var typeName: String {
        switch self {
        case .object: return "an object"
        case .array: return "an array"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        }
    }

    /// The members' keys, in file order (empty for non-objects).
    public var keys: [String] {
        if case .object(let members) = self { return members.map(\.key) }
        return []
    }

    public subscript(key: String) -> ParsedJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The value as an unsigned integer, when it is spelled as one.
    public var unsignedValue: UInt64? {
        if case .number(let text) = self { return UInt64(text) }
        return nil
    }

    /// The value as a signed integer, when it is spelled as one.
    public var integerValue: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
    }
}

/// A strict RFC 8259 parser for one JSON text (a line or a file).
public struct JSONTextParser {
    public struct Failure: Error, Equatable {
        /// 1-based byte column where the text stopped making sense.
        public var column: Int
        public var message: String
    }

    private let bytes: [UInt8]
    private var index = 0

    /// Parses `text`; the whole text must be one value (surrounding whitespace allowed).
    public static func parse(_ text: some Collection<UInt8>) throws(Failure) -> ParsedJSON {
        var parser = JSONTextParser(bytes: Array(text))
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.failure("unexpected text after the value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func failure(_ message: String) -> Failure { Failure(column: index + 1, message: message) }

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(Failure) {
        guard index < bytes.count, bytes[index] == byte else {
            throw failure("expected '\(Character(UnicodeScalar(byte)))'")
        }
        index += 1
    }

    private mutating func parseValue(depth: Int) throws(Failure) -> ParsedJSON {
        guard depth < 512 else { throw failure("nested too deeply") }
        guard index < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw failure("unexpected character")
        }
    }

    private mutating func literal(_ word: String) throws(Failure) {
        for byte in word.utf8 { try expect(byte) }
    }

    private mutating func parseObject(depth: Int) throws(Failure) -> ParsedJSON {
        try expect(UInt8(ascii: "{"))
        var members: [ParsedJSON.Member] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            members.append(.init(key: key, value: try parseValue(depth: depth + 1)))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of text in an object") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            try expect(UInt8(ascii: "}"))
            return .object(members)
        }
    }

    private mutating func parseArray(depth: Int) throws(Failure) -> ParsedJSON {
        try expect(UInt8(ascii: "["))
        var elements: [ParsedJSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw failure("unexpected end of text in an array") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            try expect(UInt8(ascii: "]"))
            return .array(elements)
        }
    }

    private mutating func parseNumber() throws(Failure) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ parser: inout JSONTextParser) -> Int {
            let begin = parser.index
            while parser.index < parser.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index])
            {
                parser.index += 1
            }
            return parser.index - begin
        }
        guard index < bytes.count else { throw failure("a number ends too early") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits(&self) == 0 {
            throw failure("a number needs digits")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw failure("a fraction needs digits") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits(&self) > 0 else { throw failure("an exponent needs digits") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseString() throws(Failure) -> String {
        try expect(UInt8(ascii: "\""))
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
            raw.removeAll(keepingCapacity: true)
        }
        while true {
            guard index < bytes.count else { throw failure("a string is not closed") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                guard index < bytes.count else { throw failure("a string ends inside an escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var value = try hex4()
                    if (0xD800..<0xDC00).contains(value) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw failure("an unpaired surrogate escape") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("an unpaired surrogate escape") }
                        value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(value) else { throw failure("an invalid \\u escape") }
                    scalars.append(scalar)
                default:
                    throw failure("an invalid escape")
                }
            case 0x00..<0x20:
                throw failure("a control character inside a string")
            default:
                raw.append(byte)
            }
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape needs 4 hex digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a \\u escape needs 4 hex digits")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }
}
