#if canImport(Glibc)
    import Glibc
#endif

/// Why an export was refused or failed: one line naming the session, stream, file or option and
/// what to do. Nothing of the export is left behind when it is thrown.
public struct ExportError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable {
        /// The request itself: a format, an option, a range, an output that exists.
        case request
        /// The session: not finished, not valid, missing a file, no data in the range.
        case session
        /// Writing the output (the disk, a codec).
        case output
        /// Stopped by the caller (Ctrl-C).
        case cancelled
    }

    public var code: Code
    public var message: String
    public var description: String { message }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// A failed system call on `path`.
    static func io(_ operation: String, path: String, errno code: Int32) -> ExportError {
        ExportError(.output, "\(operation) \(path): \(String(cString: strerror(code))) (errno \(code))")
    }
}
