import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One JSONL file of a session, written by the writer thread in large batches.
///
/// Lines are collected in `pending` and leave it with `write(2)` when it passes the batch size
/// or at each durability tick; `sync` (or, in a session, the sync thread through `syncState`)
/// `fdatasync`s what was written. A failed write keeps the error
/// (with path, operation and errno) and discards what follows for this file only, so the file
/// holds whole lines up to the failure. A full disk (ENOSPC, EDQUOT) is the exception: the lines
/// not written stay pending and each later write tries them again, so space freed before the
/// file is closed (a recorder giving back its reserve as it stops) still takes them.
///
/// Thread-bound (writer), except `syncState`, which another thread may sync.
public final class OutputFile {
    public let path: String
    let fd: Int32
    public let pending: OutputBytes
    /// Whether the file was written since its last sync, and a failed sync's error.
    public let syncState: FileSyncState
    private var writeFailure: FileWriteError?
    /// Times each write, for a report of a stalled disk.
    private let writeTimer: (any OperationTimer)?
    /// The last write found the disk full; what it could not write is still pending.
    private var waitingForSpace = false

    /// `writeTimer` and `syncTimer` time the file's writes and syncs (a slow or stalled disk
    /// is reported).
    public init(
        path: String, fd: Int32, batchBytes: Int, writeTimer: (any OperationTimer)? = nil,
        syncTimer: (any OperationTimer)? = nil
    ) {
        self.path = path
        self.fd = fd
        self.pending = OutputBytes(capacity: batchBytes + 4096)
        self.syncState = FileSyncState(path: path, fd: fd, timer: syncTimer)
        self.writeTimer = writeTimer
    }

    /// The first failed write or sync, if any.
    public var failure: FileWriteError? { writeFailure ?? syncState.failure }

    /// Creates (or truncates, as the SDK does) `path` for writing, mode 0644 less the umask. A
    /// symbolic link in its place is refused (ELOOP): what a session writes stays in it.
    public static func open(path: String) throws(FileWriteError) -> Int32 {
        let fd = path.withCString { Glibc.open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644) }
        if fd < 0 { throw FileWriteError(path: path, operation: "open", errno: errno) }
        return fd
    }

    /// Writes what is pending.
    public func writePending() {
        guard pending.count > 0 else { return }
        guard writeFailure == nil || waitingForSpace else {
            pending.removeAll()
            return
        }
        let started = writeTimer?.begin()
        defer { if let started { writeTimer?.end(started) } }
        var offset = 0
        let bytes = pending.bytes
        while offset < bytes.count {
            let written = SystemCall.retryingInterrupts {
                Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 {
                let code = errno
                writeFailure = writeFailure ?? FileWriteError(path: path, operation: "write", errno: code)
                let lineStart = truncateToWholeLines(unwritten: bytes, from: offset)
                if code == ENOSPC || code == EDQUOT {
                    // Keep the lines not written (from the cut line on) for the next attempt.
                    waitingForSpace = true
                    let rest = Array(bytes[lineStart...])
                    pending.removeAll()
                    pending.append(rest)
                } else {
                    waitingForSpace = false
                    pending.removeAll()
                }
                return
            }
            offset += written
        }
        pending.removeAll()
        waitingForSpace = false
        syncState.noteWritten()
    }

    /// After a short write, cuts the file back to its last complete line so a reader never
    /// sees half a record. Returns where in `bytes` the cut line starts.
    @discardableResult
    private func truncateToWholeLines(unwritten bytes: UnsafeBufferPointer<UInt8>, from offset: Int) -> Int {
        var partial = 0
        var index = offset - 1
        while index >= 0 && bytes[index] != UInt8(ascii: "\n") { partial += 1; index -= 1 }
        guard partial > 0 else { return offset }
        let end = lseek(fd, 0, SEEK_CUR)
        if end >= partial {
            _ = ftruncate(fd, end - off_t(partial))
            _ = lseek(fd, end - off_t(partial), SEEK_SET)
        }
        return offset - partial
    }

    /// Makes what was written durable (not while another thread syncs `syncState`).
    public func sync() { syncState.sync() }

    public func close() {
        writePending()
        sync()
        // close is never retried: on Linux the descriptor is gone even when it reports EINTR.
        let closed = Glibc.close(fd)
        let code = errno
        if closed != 0 && failure == nil && code != EINTR {
            writeFailure = FileWriteError(path: path, operation: "close", errno: code)
        }
    }
}
