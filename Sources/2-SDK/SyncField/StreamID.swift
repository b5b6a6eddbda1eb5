/// Which stream ids can become file names.
///
/// A stream id is written into `{id}.timestamps.jsonl` and `{id}.jsonl` inside the session
/// directory, so it must be one plain, visible file name there: never a path, never `.` or `..`,
/// never hidden, and short enough that the longer of the two names fits the 255-byte limit.
public enum StreamID {
    /// The longest id whose `{id}.timestamps.jsonl` still fits NAME_MAX (255 bytes).
    public static let maximumUTF8Length = 255 - SyncFieldFiles.timestampsSuffix.utf8.count

    /// Why `id` cannot be a stream id, or nil when it can.
    public static func problem(with id: String) -> String? {
        if id.isEmpty { return "it is empty" }
        if id.utf8.count > maximumUTF8Length {
            return "it is \(id.utf8.count) bytes long; the limit is \(maximumUTF8Length)"
        }
        if id.utf8.contains(0) { return "it contains a NUL character" }
        if id.utf8.contains(UInt8(ascii: "/")) { return "it contains '/', which would make it a path" }
        if id == "." || id == ".." { return "'\(id)' names a directory" }
        if id.hasPrefix(".") { return "it starts with '.', which would hide its files" }
        if id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return "it contains a control character"
        }
        return nil
    }
}
