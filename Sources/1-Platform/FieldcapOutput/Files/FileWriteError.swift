#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A file operation that failed: the file, the call and its errno, read as one line
/// ("write on /data/s1/imu.jsonl: No space left on device (errno 28)"). The SDK's writer
/// reports the same failure as its own `SyncFieldError.ioFailure`, with the same text.
public struct FileWriteError: Error, Equatable, Sendable, CustomStringConvertible {
    public let path: String
    public let operation: String
    public let errno: Int32

    public init(path: String, operation: String, errno: Int32) {
        self.path = path
        self.operation = operation
        self.errno = errno
    }

    /// The write failed for want of space (a full disk or an exhausted quota).
    public var isDiskFull: Bool { errno == ENOSPC || errno == EDQUOT }

    public var description: String {
        "\(operation) on \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

/// Times one kind of operation (writes, or syncs) on one file, so that a slow or stalled disk
/// can be reported by file. A session's `DiskWatch` hands these out.
///
/// `begin` and `end` are called by the one thread doing the operation, around each call.
public protocol OperationTimer: AnyObject, Sendable {
    /// The operation starts; pass the result to `end`.
    func begin() -> UInt64
    /// The operation that `begin` returned `started` for is over.
    func end(_ started: UInt64)
}
