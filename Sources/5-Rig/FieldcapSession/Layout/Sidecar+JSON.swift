import FieldcapCore
import FieldcapOutput
import FoundationEssentials
import SyncField

/// The text of `fieldcap.json`: what `JSONSerialization` writes with `[.prettyPrinted,
/// .sortedKeys]` (two-space indents, `"key" : value`, Foundation's key order, string escaping
/// and number spelling), without it: its first use (the casts and type lookups behind
/// `withJSONObject:`) was about a tenth of a short IMU recording's CPU on a slow core, paid
/// twice per recording.
///
/// Each number is written as its case says (`JSONValue.parse` keeps the kind a number was
/// spelled with), so a sidecar read back for `recover` is written back as it was.
extension Sidecar {
    public struct UnsupportedValue: Error, CustomStringConvertible {
        public var value: String
        public var description: String { "fieldcap.json cannot hold \(value)" }
    }

    /// The bytes of a sidecar document.
    public static func bytes(_ document: [String: JSONValue]) throws -> [UInt8] {
        let out = OutputBytes(capacity: 4096)
        try encode(.object(document), to: out, indent: 0)
        out.append(UInt8(ascii: "\n"))
        return out.array
    }

    private static func encode(_ value: JSONValue, to out: OutputBytes, indent: Int) throws {
        switch value {
        case .null: out.append("null")
        case .bool(let flag): out.append(flag ? "true" : "false")
        case .integer(let number): out.appendJSONNumber(number)
        case .unsigned(let number): out.appendJSONNumber(number)
        case .double(let number):
            guard number.isFinite else { throw UnsupportedValue(value: "\(number)") }
            out.appendJSONNumber(number)
        case .string(let text): out.appendJSONString(text)
        case .object(let members):
            guard !members.isEmpty else { return out.append("{\n\n" + indentation(indent) + "}") }
            out.append("{\n")
            for (position, key) in JSONKeyOrder.sorted(members.keys).enumerated() {
                if position > 0 { out.append(",\n") }
                out.append(indentation(indent + 2))
                out.appendJSONString(key)
                out.append(" : ")
                try encode(members[key]!, to: out, indent: indent + 2)
            }
            out.append("\n" + indentation(indent) + "}")
        case .array(let values):
            guard !values.isEmpty else { return out.append("[\n\n" + indentation(indent) + "]") }
            out.append("[\n")
            for (position, element) in values.enumerated() {
                if position > 0 { out.append(",\n") }
                out.append(indentation(indent + 2))
                try encode(element, to: out, indent: indent + 2)
            }
            out.append("\n" + indentation(indent) + "]")
        }
    }

    private static func indentation(_ width: Int) -> String { String(repeating: " ", count: width) }
}

extension OutputBytes {
    fileprivate func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }
}
