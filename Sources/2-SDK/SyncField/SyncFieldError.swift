import FieldcapOutput
import FoundationEssentials
import Glibc

/// Errors thrown by `SyncSession`.
///
/// The first three cases are the SDK's own. The others are where fieldcap refuses what the SDK
/// would have written wrongly (a NaN, a stream id that escapes the directory) or reports what
/// the SDK would have lost silently (a failed write).
public enum SyncFieldError: Error, Equatable, LocalizedError, CustomStringConvertible {
    case sessionAlreadyStarted
    case sessionNotStarted
    case writerNotOpen(String)
    /// The stream id cannot be a file name in the session directory.
    case invalidStreamId(String, reason: String)
    /// A channel value cannot be written as SyncField JSON; nothing was written for the call.
    case invalidChannelValue(streamId: String, channel: String, reason: String)
    /// A fixed-shape sensor stream was declared or fed the wrong channels.
    case invalidChannelLayout(streamId: String, reason: String)
    /// A file operation failed. `path` names the file, `operation` the call, `errno` the cause.
    case ioFailure(path: String, operation: String, errno: Int32)

    public var errorDescription: String? { description }

    public var description: String {
        switch self {
        case .sessionAlreadyStarted:
            return "Session already started"
        case .sessionNotStarted:
            return "Session not started — call start() first"
        case .writerNotOpen(let id):
            return "Writer for '\(id)' is not open"
        case .invalidStreamId(let id, let reason):
            return "stream id \(Self.quoted(id)) cannot be used: \(reason); use letters, digits, '_' or '-'"
        case .invalidChannelValue(let id, let channel, let reason):
            return
                "stream \(Self.quoted(id)): channel \(Self.quoted(channel)) "
                + "\(reason); nothing was written for this record"
        case .invalidChannelLayout(let id, let reason):
            return "stream \(Self.quoted(id)): \(reason)"
        case .ioFailure(let path, let operation, let code):
            return "\(operation) on \(path): \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// A stream id as it can be shown on one line, control characters made visible.
    static func quoted(_ id: String) -> String {
        var shown = ""
        for scalar in id.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                shown += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return "'\(shown)'"
    }
}

extension SyncFieldError {
    /// A failed file operation of the writer, as the SDK reports it.
    init(_ failure: FileWriteError) {
        self = .ioFailure(path: failure.path, operation: failure.operation, errno: failure.errno)
    }
}
