import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A small file replaced whole: an index, a manifest, a sidecar. A reader (or a recovery after a
/// power cut) finds either the old file or the whole new one, never a mix.
public enum AtomicFile {
    /// Writes `bytes` to `path` through `path.tmp`, fdatasync and rename, then syncs the
    /// directory so the rename itself survives a power cut. A symbolic link in the temporary
    /// file's place is refused (ELOOP).
    public static func write(_ bytes: [UInt8], to path: String) throws(FileWriteError) {
        let temporary = path + ".tmp"
        let fd = try OutputFile.open(path: temporary)
        let file = OutputFile(path: temporary, fd: fd, batchBytes: bytes.count)
        file.pending.append(bytes)
        file.close()
        if let failure = file.failure { throw failure }
        if rename(temporary, path) != 0 {
            throw FileWriteError(path: path, operation: "rename", errno: errno)
        }
        let directory = PathName.directory(of: path)
        let dirFD = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirFD >= 0 {
            _ = fsync(dirFD)
            close(dirFD)
        }
    }
}
