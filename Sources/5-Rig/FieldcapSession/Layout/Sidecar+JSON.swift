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
/// Takes what the sidecar is built from (strings, booleans, integers, floating-point numbers,
/// arrays and string-keyed dictionaries of them) and what `PlainJSON` reads back, for `recover`.
extension Sidecar {
    public struct UnsupportedValue: Error, CustomStringConvertible {
        public var value: String
        public var description: String { "fieldcap.json cannot hold \(value)" }
    }

    /// The bytes of a sidecar document.
    public static func bytes(_ document: [String: Any]) throws -> [UInt8] {
        let out = OutputBytes(capacity: 4096)
        try encode(document, to: out, indent: 0)
        out.append(UInt8(ascii: "\n"))
        return out.array
    }

    private static func encode(_ value: Any, to out: OutputBytes, indent: Int) throws {
        if let json = value as? JSONValue { return try encode(json, to: out, indent: indent) }
        // Exact types: with Foundation, `as?` also bridges between numbers and Bool.
        let kind = type(of: value)
        switch value {
        case is JSONNull: out.append("null")
        case let text as String: out.appendJSONString(text)
        case let flag as Bool where kind == Bool.self: out.append(flag ? "true" : "false")
        case let number as Int where kind == Int.self: out.appendJSONNumber(number)
        case let number as Int64 where kind == Int64.self: out.appendJSONNumber(number)
        case let number as Int32 where kind == Int32.self: out.appendJSONNumber(Int64(number))
        case let number as UInt64 where kind == UInt64.self: out.appendJSONNumber(number)
        case let number as UInt32 where kind == UInt32.self: out.appendJSONNumber(UInt64(number))
        case let number as UInt where kind == UInt.self: out.appendJSONNumber(UInt64(number))
        case let number as Double where kind == Double.self: try appendFinite(number, to: out)
        case let number as Float where kind == Float.self: try appendFinite(Double(number), to: out)
        case let object as [String: Any]:
            guard !object.isEmpty else { return out.append("{\n\n" + indentation(indent) + "}") }
            out.append("{\n")
            for (position, key) in JSONKeyOrder.sorted(object.keys).enumerated() {
                if position > 0 { out.append(",\n") }
                out.append(indentation(indent + 2))
                out.appendJSONString(key)
                out.append(" : ")
                try encode(object[key]!, to: out, indent: indent + 2)
            }
            out.append("\n" + indentation(indent) + "}")
        case let array as [Any]:
            guard !array.isEmpty else { return out.append("[\n\n" + indentation(indent) + "]") }
            out.append("[\n")
            for (position, element) in array.enumerated() {
                if position > 0 { out.append(",\n") }
                out.append(indentation(indent + 2))
                try encode(element, to: out, indent: indent + 2)
            }
            out.append("\n" + indentation(indent) + "]")
        default:
            throw UnsupportedValue(value: "\(type(of: value))")
        }
    }

    /// What a source reported (`JSONValue`), written by the same rules.
    private static func encode(_ value: JSONValue, to out: OutputBytes, indent: Int) throws {
        switch value {
        case .null: out.append("null")
        case .bool(let flag): out.append(flag ? "true" : "false")
        case .integer(let number): out.appendJSONNumber(number)
        case .unsigned(let number): out.appendJSONNumber(number)
        case .double(let number): try appendFinite(number, to: out)
        case .string(let text): out.appendJSONString(text)
        case .array(let values): try encode(values as [Any], to: out, indent: indent)
        case .object(let members): try encode(members as [String: Any], to: out, indent: indent)
        }
    }

    private static func appendFinite(_ number: Double, to out: OutputBytes) throws {
        guard number.isFinite else { throw UnsupportedValue(value: "\(number)") }
        out.appendJSONNumber(number)
    }

    private static func indentation(_ width: Int) -> String { String(repeating: " ", count: width) }
}

extension OutputBytes {
    fileprivate func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }
}
