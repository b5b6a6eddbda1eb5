import CMatroska

#if canImport(Glibc)
    import Glibc
#endif

/// An error writing or reading a video file: the file, the call and the library's or the
/// system's own message.
public struct MediaError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var operation: String
    public var code: Int32
    public var message: String

    public var description: String { "\(operation) on \(path): \(message) (\(code))" }

    static func system(_ code: Int32, _ operation: String, path: String) -> MediaError {
        MediaError(path: path, operation: operation, code: code, message: String(cString: strerror(code)))
    }
}

extension MediaError {
    /// What a CMatroska call reported.
    init(cError: CMatroska_error, path: String) {
        var error = cError
        let operation = withUnsafeBytes(of: &error.operation) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        let message = withUnsafeBytes(of: &error.message) {
            String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
        }
        self.init(path: path, operation: operation, code: error.code, message: message)
    }
}
