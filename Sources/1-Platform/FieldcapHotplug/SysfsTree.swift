import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A sysfs tree read as the kernel lays it out, under a root that is `/sys` on a rig and a
/// temporary folder in the tests. Paths handed in and out are relative to the root
/// (`/devices/platform/vivid.0`), so an identity read from one tree compares with another's.
struct SysfsTree {
    /// The root as given (`/sys`), and as `realpath` spells it: links resolve under the latter.
    let root: String
    private let resolvedRoot: String

    init(_ root: String) {
        self.root = root
        resolvedRoot = Self.realPath(root) ?? root
    }

    /// An attribute's text without its trailing newline; nil when it cannot be read (absent, or
    /// gone with its device: a tree changes while it is read).
    func read(_ path: String) -> String? {
        let descriptor = SystemCall.retryingInterrupts { open(root + path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return nil }
        defer { _ = close(descriptor) }
        // Attributes are one page at most (sysfs(5)).
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = bytes.withUnsafeMutableBytes { buffer in
            SystemCall.retryingInterrupts { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
        }
        guard count >= 0 else { return nil }
        var text = String(decoding: bytes[..<count], as: UTF8.self)
        while text.last == "\n" { text.removeLast() }
        return text
    }

    func exists(_ path: String) -> Bool { access(root + path, F_OK) == 0 }

    /// The entries of a directory (without `.` and `..`), sorted; empty when it cannot be read.
    func list(_ path: String) -> [String] {
        guard let directory = opendir(root + path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Where `path` leads once every link is followed, relative to the root; nil when it leads
    /// nowhere or outside the tree.
    func resolve(_ path: String) -> String? {
        guard let resolved = Self.realPath(root + path) else { return nil }
        if resolvedRoot == "/" { return resolved }
        if resolved == resolvedRoot { return "/" }
        guard resolved.hasPrefix(resolvedRoot + "/") else { return nil }
        return String(resolved.dropFirst(resolvedRoot.count))
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
