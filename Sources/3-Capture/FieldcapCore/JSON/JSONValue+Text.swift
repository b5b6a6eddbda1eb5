import FieldcapOutput
import SyncField

extension JSONValue {
    /// Compact JSON text (what `JSONSerialization.data(withJSONObject:)` wrote with
    /// `.sortedKeys`): keys in Foundation's order, strings and numbers spelled as it spells them;
    /// `escapingSlashes: false` is its `.withoutEscapingSlashes`. Nil for a value JSON cannot
    /// hold (a number that is not finite).
    public func compactText(escapingSlashes: Bool = true) -> String? {
        let out = OutputBytes(capacity: 256)
        guard write(to: out, escapingSlashes: escapingSlashes) else { return nil }
        return String(decoding: out.bytes, as: UTF8.self)
    }

    private func write(to out: OutputBytes, escapingSlashes: Bool) -> Bool {
        switch self {
        case .null: out.append("null")
        case .bool(let flag): out.append(flag ? "true" : "false")
        case .integer(let number): out.appendJSONNumber(number)
        case .unsigned(let number): out.appendJSONNumber(number)
        case .double(let number):
            guard number.isFinite else { return false }
            out.appendJSONNumber(number)
        case .string(let text): Self.write(text, to: out, escapingSlashes: escapingSlashes)
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (position, key) in JSONKeyOrder.sorted(members.keys).enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                Self.write(key, to: out, escapingSlashes: escapingSlashes)
                out.append(UInt8(ascii: ":"))
                guard members[key]!.write(to: out, escapingSlashes: escapingSlashes) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (position, value) in values.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                guard value.write(to: out, escapingSlashes: escapingSlashes) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        }
        return true
    }

    private static func write(_ text: String, to out: OutputBytes, escapingSlashes: Bool) {
        if escapingSlashes {
            out.appendJSONString(text)
        } else {
            // A `/` in the escaped text is always the `\/` escape, never half of `\\`.
            out.append(
                Array(
                    String(decoding: OutputBytes.jsonStringLiteral(text), as: UTF8.self)
                        .replacing("\\/", with: "/").utf8))
        }
    }
}
