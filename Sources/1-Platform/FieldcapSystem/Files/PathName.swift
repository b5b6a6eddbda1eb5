#if canImport(Glibc)
    import Glibc
#endif

/// A file path split at its last `/`, as NSString's `deletingLastPathComponent` and
/// `lastPathComponent` would: Foundation's (Swift 6.3 on Linux) trap on some short paths
/// (`--out c`), so fieldcap splits its paths itself. Trailing slashes are ignored.
public enum PathName {
    /// `a/b` → `a`, `/b` → `/`, `b` → `` (no directory part).
    public static func directory(of path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        let parent = withoutTrailingSlashes(String(trimmed[..<slash]))
        return parent.isEmpty ? "/" : parent
    }

    /// `a/b` → `b`, `b/` → `b`, `/` → `/`.
    public static func base(of path: String) -> String {
        let trimmed = withoutTrailingSlashes(path)
        if trimmed == "/" { return "/" }
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// Whether `path` itself is a symbolic link (not what it leads to).
    public static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
    }

    /// A name of one entry of a directory: not empty, not `.` or `..`, no `/` and no NUL. What
    /// a file on disk names (a recording's segment) must be, so that it cannot lead outside.
    public static func isPlainName(_ name: String) -> Bool {
        !name.isEmpty && name != "." && name != ".." && !name.contains("/") && !name.utf8.contains(0)
    }

    private static func withoutTrailingSlashes(_ path: String) -> String {
        var text = Substring(path)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        return String(text)
    }
}
