import FieldcapOutput
import SyncField

extension JSONValue {
    /// A number JSON cannot hold (NaN, an infinity), met while writing.
    public struct NonFiniteNumber: Error {
        public var value: Double
    }

    /// Compact JSON text (what `JSONSerialization.data(withJSONObject:)` wrote with
    /// `.sortedKeys`): keys in Foundation's order, strings and numbers spelled as it spells them;
    /// `escapingSlashes: false` is its `.withoutEscapingSlashes`. Nil for a value JSON cannot
    /// hold (a number that is not finite).
    public func compactText(escapingSlashes: Bool = true) -> String? {
        let out = OutputBytes(capacity: 256)
        do throws(NonFiniteNumber) {
            try write(to: out, escapingSlashes: escapingSlashes, indent: nil)
        } catch {
            return nil
        }
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// Appends the value as `JSONSerialization` writes it with `[.prettyPrinted, .sortedKeys]`:
    /// each member on a line of its own two spaces further in, `"key" : value`, an empty object
    /// or array as its brackets around an empty line.
    public func writePretty(to out: OutputBytes) throws(NonFiniteNumber) {
        try write(to: out, escapingSlashes: true, indent: 0)
    }

    /// Compact without `indent`, pretty from that indent with it.
    private func write(to out: OutputBytes, escapingSlashes: Bool, indent: Int?) throws(NonFiniteNumber) {
        switch self {
        case .null: out.append("null")
        case .bool(let flag): out.append(flag ? "true" : "false")
        case .integer(let number): out.appendJSONNumber(number)
        case .unsigned(let number): out.appendJSONNumber(number)
        case .double(let number):
            guard number.isFinite else { throw NonFiniteNumber(value: number) }
            out.appendJSONNumber(number)
        case .string(let text): Self.write(text, to: out, escapingSlashes: escapingSlashes)
        case .object(let members):
            let keys = JSONKeyOrder.sorted(members.keys)
            try Self.container("{", "}", count: keys.count, to: out, indent: indent) {
                (position, inner) throws(NonFiniteNumber) in
                Self.write(keys[position], to: out, escapingSlashes: escapingSlashes)
                out.append(inner == nil ? ":" : " : ")
                try members[keys[position]]!.write(to: out, escapingSlashes: escapingSlashes, indent: inner)
            }
        case .array(let values):
            try Self.container("[", "]", count: values.count, to: out, indent: indent) {
                (position, inner) throws(NonFiniteNumber) in
                try values[position].write(to: out, escapingSlashes: escapingSlashes, indent: inner)
            }
        }
    }

    /// A container's brackets and separators around `count` members, each written by `member`
    /// with its own indent (nil: compact).
    private static func container(
        _ open: StaticString, _ close: StaticString, count: Int, to out: OutputBytes, indent: Int?,
        member: (_ position: Int, _ indent: Int?) throws(NonFiniteNumber) -> Void
    ) throws(NonFiniteNumber) {
        out.append(open)
        guard let indent else {
            for position in 0..<count {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                try member(position, nil)
            }
            return out.append(close)
        }
        out.append("\n")
        for position in 0..<count {
            if position > 0 { out.append(",\n") }
            spaces(indent + 2, to: out)
            try member(position, indent + 2)
        }
        out.append("\n")
        spaces(indent, to: out)
        out.append(close)
    }

    private static func spaces(_ count: Int, to out: OutputBytes) {
        for _ in 0..<count { out.append(UInt8(ascii: " ")) }
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
