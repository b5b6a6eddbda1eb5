#if canImport(Glibc)
    import Glibc
#endif

/// An error number a system call left in `errno`, kept as a value so it survives the next call.
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// What the calling thread's `errno` holds now.
    public static var current: Errno { Errno(errno) }

    public static let interrupted = Errno(EINTR)
    public static let wouldBlock = Errno(EAGAIN)
    public static let brokenPipe = Errno(EPIPE)
    public static let noDevice = Errno(ENODEV)
    public static let ioError = Errno(EIO)

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 128)
        // strerror_r, not strerror: errors are described on many threads at once.
        guard strerror_r(rawValue, &buffer, buffer.count) == 0 else { return "errno \(rawValue)" }
        let message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(message) (errno \(rawValue))"
    }
}
