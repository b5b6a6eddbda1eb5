import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A file an export writes, front to back, through a buffer of `bufferBytes`: one `write(2)` per
/// buffer, so an MCAP file of small IMU records costs no more calls than one of frames.
/// `position` is where the next byte lands (MCAP's indexes point at offsets).
///
/// Thread-bound (the exporter's).
final class ExportFile {
    let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private let bufferBytes: Int
    private(set) var position: UInt64 = 0

    /// Creates `path`, which must not exist (O_EXCL): an export never overwrites.
    init(creating path: String, bufferBytes: Int = 1 << 20) throws(ExportError) {
        let fd = path.withCString { open($0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
        if fd < 0 { throw .io("create", path: path, errno: errno) }
        self.path = path
        self.fd = fd
        self.bufferBytes = bufferBytes
        buffer.reserveCapacity(bufferBytes)
    }

    deinit { close(fd) }

    func write(_ bytes: some Collection<UInt8>) throws(ExportError) {
        position += UInt64(bytes.count)
        if buffer.count + bytes.count > bufferBytes {
            try flush()
            if bytes.count >= bufferBytes {
                let whole = Array(bytes)
                if let failure = whole.withUnsafeBytes({ writeAll($0) }) { throw failure }
                return
            }
        }
        buffer.append(contentsOf: bytes)
    }

    /// Writes what is buffered.
    func flush() throws(ExportError) {
        guard !buffer.isEmpty else { return }
        if let failure = buffer.withUnsafeBytes({ writeAll($0) }) { throw failure }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and syncs: the file is whole on disk before the export calls itself done.
    func finish() throws(ExportError) {
        try flush()
        if fsync(fd) != 0 { throw .io("fsync", path: path, errno: errno) }
    }

    /// Writes all of `bytes`; the failure, if any.
    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> ExportError? {
        var offset = 0
        while offset < bytes.count {
            let written = SystemCall.retryingInterrupts {
                Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 { return .io("write", path: path, errno: errno) }
            offset += written
        }
        return nil
    }

    /// Writes a whole small file (a PNG, a CSV, a YAML) at once.
    static func write(_ bytes: [UInt8], to path: String) throws(ExportError) {
        let file = try ExportFile(creating: path, bufferBytes: 0)
        if let failure = bytes.withUnsafeBytes({ file.writeAll($0) }) { throw failure }
    }
}
