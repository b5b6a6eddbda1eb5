import FoundationEssentials
import Glibc

/// An error in a user's words, for messages: a file operation's errno as the C library says it
/// (`No such file or directory`), anything else as it describes itself. Full Foundation's
/// `localizedDescription` wrote such sentences from its localized tables; FoundationEssentials
/// keeps the errno under the `CocoaError`.
public func errorText(_ error: any Error) -> String {
    if let cocoa = error as? CocoaError, let posix = cocoa.underlying as? POSIXError {
        return String(cString: strerror(posix.code.rawValue))
    }
    if let posix = error as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
    return "\(error)"
}

extension String {
    /// The text with control characters escaped (`\n`, `\u{7}`), so an error about it stays one line.
    public var printable: String {
        String(
            unicodeScalars.map { $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0) }
                .joined())
    }
}
