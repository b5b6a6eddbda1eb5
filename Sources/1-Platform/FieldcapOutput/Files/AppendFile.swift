import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small log that only grows, a line at a time, each line durable before the call returns: a
/// segment's `events.ndjson`. Rare lines (a mark) from any thread, not a stream's.
public enum AppendFile {
    /// Appends `line` (which ends in a newline) to `path`, created 0644 if missing, then
    /// fdatasyncs it (and, for a new file, its directory). A file whose last line was cut off (a
    /// crash mid-write) gets a newline first, so the cut line stays whole as it is and the new
    /// one is a line of its own. A symbolic link in its place is refused (ELOOP).
    public static func append(_ line: [UInt8], to path: String) throws(FileWriteError) {
        let existed = access(path, F_OK) == 0
        let fd = path.withCString { Glibc.open($0, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644) }
        if fd < 0 { throw FileWriteError(path: path, operation: "open", errno: errno) }
        defer { close(fd) }
        var bytes = line
        var info = stat()
        if fstat(fd, &info) == 0, info.st_size > 0 {
            var last: UInt8 = 0
            if pread(fd, &last, 1, info.st_size - 1) == 1, last != UInt8(ascii: "\n") {
                bytes.insert(UInt8(ascii: "\n"), at: 0)
            }
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                SystemCall.retryingInterrupts { write(fd, buffer.baseAddress! + offset, buffer.count - offset) }
            }
            if written < 0 { throw FileWriteError(path: path, operation: "write", errno: errno) }
            offset += written
        }
        if fdatasync(fd) != 0 { throw FileWriteError(path: path, operation: "fdatasync", errno: errno) }
        if !existed {
            let directory = PathName.directory(of: path)
            let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if dirFD >= 0 {
                _ = fsync(dirFD)
                close(dirFD)
            }
        }
    }
}
