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

    /// The name as the request spelled it, percent-decoding undone; nil when the encoding is broken.
    static func decode(_ raw: String) -> String? {
        raw.contains("%") ? raw.removingPercentEncoding : raw
    }
}
