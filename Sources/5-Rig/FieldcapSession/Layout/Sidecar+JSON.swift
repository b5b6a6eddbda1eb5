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
        do throws(JSONValue.NonFiniteNumber) {
            try JSONValue.object(document).writePretty(to: out)
        } catch {
            throw UnsupportedValue(value: "\(error.value)")
        }
        out.append(UInt8(ascii: "\n"))
        return out.array
    }
}
