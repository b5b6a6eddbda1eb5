import Glibc
import NIOCore
import NIOPosix

/// Why a connection could not be made, in the words a user reads in one line: the system's
/// words for an errno ("connection refused"), the host that has no address. NIO's own
/// descriptions name its types and wrap each address tried.
public enum ConnectionFailure {
    public static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            // Each address tried failed; the first one's errno says why (refused, unreachable).
            if let first = error.connectionErrors.first { return describe(first.error) }
            if let lookup = error.dnsAError ?? error.dnsAAAAError { return describe(lookup) }
            return "no address to connect to"
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? SocketAddressError.UnknownHost { return "no such host \(error.host)" }
        return "\(error)"
    }
}
