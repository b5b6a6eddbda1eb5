import FieldcapSegments
import FoundationEssentials

/// A mark's line in an `events.ndjson`: one JSON object a line, keys sorted, `"event": "mark"`
/// (so other kinds of events may join it), the mark's fields as the index has them.
public enum MarkLine {
    public static let fileName = "events.ndjson"

    public static func bytes(_ mark: Mark) -> [UInt8] {
        struct Line: Encodable {
            var event = "mark"
            var mark: Mark
            func encode(to encoder: Encoder) throws {
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(event, forKey: Key("event"))
                try mark.encode(to: encoder)
            }
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(_ value: String) { stringValue = value }
                init?(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // A Mark always encodes.
        var bytes = [UInt8]((try? encoder.encode(Line(mark: mark))) ?? Data())
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The marks in an `events.ndjson`'s bytes, in order; a line that is not one (cut off by a
    /// crash, another kind of event) is passed over.
    public static func marks(in data: Data) -> [Mark] {
        let decoder = JSONDecoder()
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let mark = try? decoder.decode(Mark.self, from: Data(line)) else { return nil }
            return mark
        }
    }

    /// The marks in `directory/events.ndjson` (none without one).
    public static func marks(inDirectory directory: String) -> [Mark] {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(fileName)") else { return [] }
        return marks(in: data)
    }
}
