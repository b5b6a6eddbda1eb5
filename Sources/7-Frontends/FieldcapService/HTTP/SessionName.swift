/// A session name from a request: one directory directly under the sessions root, never a path.
enum SessionName {
    /// Why `name` cannot name a session, or nil when it can. Refused: empty, `.` and `..`, a
    /// leading dot (the service's own scratch directories), `/`, `\`, and control characters.
    static func problem(with name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name == "." || name == ".." || name.hasPrefix(".") { return "starts with a dot" }
        if name.contains("/") || name.contains("\\") { return "contains a slash; give a session's name, not a path" }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "contains a control character"
        }
        if name.utf8.count > 255 { return "is longer than 255 bytes" }
        return nil
    }

    /// The name as the request spelled it, percent-decoding undone; nil when the encoding is broken:
    /// a `%` without two hex digits after it, or bytes that are not UTF-8. (Foundation's
    /// `removingPercentEncoding`, which did this, is full Foundation's.)
    static func decode(_ raw: String) -> String? {
        guard raw.contains("%") else { return raw }
        var bytes: [UInt8] = []
        var utf8 = raw.utf8.makeIterator()
        while let byte = utf8.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = utf8.next().flatMap(hexValue), let low = utf8.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
