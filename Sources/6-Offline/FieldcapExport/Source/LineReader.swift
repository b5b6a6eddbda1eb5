import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A JSONL file's lines, read front to back in blocks: an hour of a 1 kHz IMU is hundreds of
/// megabytes, never all in memory. A last line without its newline was never finished and is
/// not a line (as the validator counts them).
///
/// Thread-bound.
final class LineReader {
    let path: String
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// 1-based number of the line `next` returned last.
    private(set) var lineNumber = 0

    init(path: String) throws(ExportError) {
        let fd = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        if fd < 0 { throw ExportError(.session, "\(path) cannot be opened: \(String(cString: strerror(errno)))") }
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// The next line, without its newline; nil at the end.
    func next() throws(ExportError) -> ArraySlice<UInt8>? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<newline]
                start = newline + 1
                lineNumber += 1
                return line
            }
            if atEnd { return nil }
            buffer.removeFirst(start)
            start = 0
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: 1 << 20))
            let count = SystemCall.retryingInterrupts {
                buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + old, 1 << 20) }
            }
            if count < 0 {
                throw ExportError(.session, "\(path) cannot be read: \(String(cString: strerror(errno)))")
            }
            buffer.removeLast((1 << 20) - count)
            if count == 0 { atEnd = true }
        }
    }
}
