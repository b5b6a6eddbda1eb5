import FieldcapOutput
import SyncField

/// JSON read into plain Swift values, where fieldcap used `JSONSerialization.jsonObject` (full
/// Foundation, and with it ICU's data, in the rig binary): objects as `[String: Any]`, arrays
/// as `[Any]`, strings, `Bool`, `JSONNull`, and each number as the type its spelling says:
/// `Int` for an integer that fits, `UInt64` beyond that, `Double` otherwise.
///
/// Foundation's `NSNumber` cast to any numeric type; these do not, so a reader that wants a
/// number asks `double(_:)`, `int(_:)` or `uint64(_:)`, which take each of them. The sidecar's
/// writer (`Sidecar.bytes`) writes the three back as they were spelled.
public enum PlainJSON {
    /// The value of a JSON text; nil when it is not one (RFC 8259, strict).
    public static func parse(_ text: some Collection<UInt8>) -> Any? {
        (try? JSONTextParser.parse(text)).map(plain)
    }

    /// The object of a JSON text; nil when it is not an object.
    public static func object(_ text: some Collection<UInt8>) -> [String: Any]? {
        parse(text) as? [String: Any]
    }

    public static func double(_ value: Any?) -> Double? {
        guard let value, !(type(of: value) == Bool.self) else { return nil }
        return switch value {
        case let number as Double: number
        case let number as Int: Double(number)
        case let number as UInt64: Double(number)
        case let number as Int64: Double(number)
        case let number as Float: Double(number)
        default: nil
        }
    }

    /// A whole number that fits an `Int` (a `Double` only when it is whole).
    public static func int(_ value: Any?) -> Int? {
        guard let value, !(type(of: value) == Bool.self) else { return nil }
        return switch value {
        case let number as Int: number
        case let number as UInt64: Int(exactly: number)
        case let number as Int64: Int(exactly: number)
        case let number as Double: Int(exactly: number)
        default: nil
        }
    }

    /// A whole number from 0 to `UInt64.max` (a `Double` only when it is whole).
    public static func uint64(_ value: Any?) -> UInt64? {
        guard let value, !(type(of: value) == Bool.self) else { return nil }
        return switch value {
        case let number as UInt64: number
        case let number as Int: UInt64(exactly: number)
        case let number as Int64: UInt64(exactly: number)
        case let number as Double: UInt64(exactly: number)
        default: nil
        }
    }

    /// Compact JSON text of plain values (what `JSONSerialization.data(withJSONObject:)` wrote
    /// with `.sortedKeys`): keys in Foundation's order, strings and numbers spelled as it
    /// spells them; `escapingSlashes: false` is its `.withoutEscapingSlashes`. Nil for a value
    /// JSON cannot hold (another type, a number that is not finite).
    public static func text(_ value: Any, escapingSlashes: Bool = true) -> String? {
        let out = OutputBytes(capacity: 256)
        guard write(value, to: out, escapingSlashes: escapingSlashes) else { return nil }
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private static func write(_ value: Any, to out: OutputBytes, escapingSlashes: Bool) -> Bool {
        // Exact types: with Foundation loaded (the tests), `as?` also bridges numbers and Bool.
        let kind = type(of: value)
        switch value {
        case let text as String:
            if escapingSlashes {
                out.appendJSONString(text)
            } else {
                // A `/` in the escaped text is always the `\/` escape, never half of `\\`.
                out.append(
                    Array(
                        String(decoding: OutputBytes.jsonStringLiteral(text), as: UTF8.self)
                            .replacing("\\/", with: "/").utf8))
            }
        case let flag as Bool where kind == Bool.self: out.append(flag ? "true" : "false")
        // `JSONValue.plain`'s null, and PlainJSON's.
        case is JSONNull, Optional<Any>.none: out.append("null")
        case let number as Int where kind == Int.self: out.appendJSONNumber(Int64(number))
        case let number as Int64 where kind == Int64.self: out.appendJSONNumber(number)
        case let number as UInt64 where kind == UInt64.self: out.appendJSONNumber(number)
        case let number as Double where kind == Double.self:
            guard number.isFinite else { return false }
            out.appendJSONNumber(number)
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (position, key) in JSONKeyOrder.sorted(object.keys).enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                guard write(key, to: out, escapingSlashes: escapingSlashes) else { return false }
                out.append(UInt8(ascii: ":"))
                guard write(object[key]!, to: out, escapingSlashes: escapingSlashes) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        case let array as [Any]:
            out.append(UInt8(ascii: "["))
            for (position, element) in array.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                guard write(element, to: out, escapingSlashes: escapingSlashes) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        default:
            return false
        }
        return true
    }

    private static func plain(_ value: ParsedJSON) -> Any {
        switch value {
        case .object(let members):
            var object: [String: Any] = [:]
            for member in members { object[member.key] = plain(member.value) }
            return object
        case .array(let items): return items.map(plain)
        case .string(let text): return text
        case .bool(let flag): return flag
        case .null: return JSONNull()
        case .number(let spelling):
            if let integer = Int(spelling) { return integer }
            if let unsigned = UInt64(spelling) { return unsigned }
            // The parser let only JSON's number syntax through, which Double's parser takes.
            return Double(spelling) ?? 0
        }
    }
}

/// JSON's `null` among plain values (Foundation's `NSNull`).
public struct JSONNull: Sendable, Equatable {
    public init() {}
}
