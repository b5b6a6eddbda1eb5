import SyncField

/// The bytes of one `--json` line as `JSONSerialization` wrote them with `[.sortedKeys,
/// .withoutEscapingSlashes]` (no spaces, Foundation's key order, its string escaping and number
/// spelling), made with the SyncField encoder's parts: `JSONSerialization` is full Foundation.
///
/// Takes what the status lines are made of: strings, `Bool`, `Int`, `Int64`, `UInt64`, finite
/// `Double`s, `[String: Any]`, `[Any]`, and the null of `JSONValue.plain`. Nil for anything else,
/// where `JSONSerialization` threw.
enum JSONLine {
    static func bytes(_ object: [String: Any]) -> [UInt8]? {
        let out = OutputBytes(capacity: 1024)
        return append(object, to: out) ? out.array : nil
    }

    private static func append(_ value: Any, to out: OutputBytes) -> Bool {
        // Exact types: with Foundation loaded, `as?` also bridges between numbers and Bool.
        let kind = type(of: value)
        switch value {
        case Optional<Any>.none: out.append("null")
        case let text as String: appendString(text, to: out)
        case let flag as Bool where kind == Bool.self: out.append(flag ? "true" : "false")
        case let number as Int where kind == Int.self: out.appendJSONNumber(number)
        case let number as Int64 where kind == Int64.self: out.appendJSONNumber(number)
        case let number as UInt64 where kind == UInt64.self: out.appendJSONNumber(number)
        case let number as Double where kind == Double.self:
            guard number.isFinite else { return false }
            out.appendJSONNumber(number)
        case let object as [String: Any]:
            out.append("{")
            for (position, key) in JSONKeyOrder.sorted(object.keys).enumerated() {
                if position > 0 { out.append(",") }
                appendString(key, to: out)
                out.append(":")
                guard append(object[key]!, to: out) else { return false }
            }
            out.append("}")
        case let array as [Any]:
            out.append("[")
            for (position, element) in array.enumerated() {
                if position > 0 { out.append(",") }
                guard append(element, to: out) else { return false }
            }
            out.append("]")
        default:
            return false
        }
        return true
    }

    /// `text` escaped as `JSONSerialization` escapes it, but for `/`: each `/` the encoder
    /// writes is its `\/` escape, so dropping the backslash before a `/` unescapes exactly those.
    private static func appendString(_ text: String, to out: OutputBytes) {
        let literal = OutputBytes.jsonStringLiteral(text)
        for index in literal.indices {
            let escapesSlash = literal[index] == UInt8(ascii: "\\") && literal[index + 1] == UInt8(ascii: "/")
            if !escapesSlash { out.append(literal[index]) }
        }
    }
}
