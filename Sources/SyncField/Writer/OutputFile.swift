#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One JSONL file of a session, written by the writer thread in large batches.
///
/// Lines are collected in `pending` and leave it with `write(2)` when it passes the batch size
/// or at each durability tick, which also `fdatasync`s. A failed write keeps the error
/// (with path, operation and errno) and discards what follows for this file only, so the file
/// holds whole lines up to the failure.
///
/// Thread-bound (writer).
package final class OutputFile {
    package let path: String
    let fd: Int32
    package let pending: ByteBuffer
    package private(set) var failure: SyncFieldError?
    private var dirty = false

    package init(path: String, fd: Int32, batchBytes: Int) {
        self.path = path
        self.fd = fd
        self.pending = ByteBuffer(capacity: batchBytes + 4096)
    }

    /// Creates (or truncates, as the SDK does) `path` for writing.
    package static func open(path: String) throws(SyncFieldError) -> Int32 {
        let fd = path.withCString { Glibc.open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        if fd < 0 { throw .ioFailure(path: path, operation: "open", errno: errno) }
        return fd
    }

    /// Writes what is pending.
    package func writePending() {
        guard pending.count > 0 else { return }
        defer { pending.removeAll() }
        guard failure == nil else { return }
        var offset = 0
        let bytes = pending.bytes
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                failure = .ioFailure(path: path, operation: "write", errno: errno)
                truncateToWholeLines(unwritten: bytes, from: offset)
                return
            }
            offset += written
        }
        dirty = true
    }

    /// After a short write, cuts the file back to its last complete line so a reader never
    /// sees half a record.
    private func truncateToWholeLines(unwritten bytes: UnsafeBufferPointer<UInt8>, from offset: Int) {
        var partial = 0
        var index = offset - 1
        while index >= 0 && bytes[index] != UInt8(ascii: "\n") { partial += 1; index -= 1 }
        guard partial > 0 else { return }
        let end = lseek(fd, 0, SEEK_CUR)
        if end >= partial { _ = ftruncate(fd, end - off_t(partial)) }
    }

    /// Makes what was written durable.
    package func sync() {
        guard dirty, failure == nil else { return }
        dirty = false
        if fdatasync(fd) != 0 && errno != EINVAL {
            failure = .ioFailure(path: path, operation: "fdatasync", errno: errno)
        }
    }

    package func close() {
        writePending()
        sync()
        // close is never retried: on Linux the descriptor is gone even when it reports EINTR.
        if Glibc.close(fd) != 0 && failure == nil && errno != EINTR {
            failure = .ioFailure(path: path, operation: "close", errno: errno)
        }
    }
}
