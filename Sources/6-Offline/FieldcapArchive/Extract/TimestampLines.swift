import FoundationEssentials

/// A stream's lines (`{id}.timestamps.jsonl`, `{id}.jsonl`, `{id}.frames.ndjson`) as bytes, cut
/// and renumbered without parsing the JSON: the values are copied as they were written, so an
/// extract's lines are the recording's, byte for byte, but for `frame_number`.
struct TimestampLines {
    /// The file's bytes; each line is a range of them, without its newline.
    let bytes: [UInt8]
    let lines: [Range<Int>]

    init(bytes: [UInt8]) {
        self.bytes = bytes
        var lines: [Range<Int>] = []
        var start = 0
        for (offset, byte) in bytes.enumerated() where byte == UInt8(ascii: "\n") {
            lines.append(start..<offset)
            start = offset + 1
        }
        // A last line without its newline was never finished: not a line.
        self.lines = lines
    }

    /// nil when the file cannot be read.
    init?(path: String) {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        self.init(bytes: [UInt8](data))
    }

    /// The line's `capture_ns`: the first key of every SyncField line.
    func captureNs(_ line: Int) -> UInt64? { Self.number(after: Self.captureKey, in: bytes[lines[line]]) }

    /// The line with its top-level `frame_number` set to `number`: the last `"frame_number":` in
    /// it (sorted keys put `frame_number` after `channels` in a sensor line; fieldcap's frame log
    /// puts it first, and has no other).
    func renumbered(_ line: Int, to number: Int, into out: inout [UInt8]) {
        let text = bytes[lines[line]]
        guard let key = Self.lastRange(of: Self.frameNumberKey, in: text) else {
            out.append(contentsOf: text)
            out.append(UInt8(ascii: "\n"))
            return
        }
        var end = key.upperBound
        while end < text.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[end]) { end += 1 }
        out.append(contentsOf: text[text.startIndex..<key.upperBound])
        out.append(contentsOf: String(number).utf8)
        out.append(contentsOf: text[end..<text.endIndex])
        out.append(UInt8(ascii: "\n"))
    }

    static let captureKey = Array(#"{"capture_ns":"#.utf8)
    static let frameNumberKey = Array(#""frame_number":"#.utf8)

    static func number(after prefix: [UInt8], in text: ArraySlice<UInt8>) -> UInt64? {
        guard text.count > prefix.count, text.starts(with: prefix) else { return nil }
        var value: UInt64 = 0
        var position = text.startIndex + prefix.count
        var digits = 0
        while position < text.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[position]) {
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            guard !overflow else { return nil }
            value = times + UInt64(text[position] - UInt8(ascii: "0"))
            position += 1
            digits += 1
        }
        return digits > 0 ? value : nil
    }

    static func lastRange(of needle: [UInt8], in text: ArraySlice<UInt8>) -> Range<Int>? {
        guard text.count >= needle.count else { return nil }
        var start = text.endIndex - needle.count
        while start >= text.startIndex {
            if text[start..<start + needle.count].elementsEqual(needle) { return start..<start + needle.count }
            start -= 1
        }
        return nil
    }
}
