import FoundationEssentials
import Glibc

/// Why a file operation of `FileManager` or `Data` failed, in the system's words ("No such file
/// or directory"): the errno its `CocoaError` carries. `localizedDescription`, which told it
/// before, is full Foundation's.
func fileErrorReason(_ error: any Error) -> String {
    if let cocoa = error as? CocoaError, let posix = cocoa.underlying as? POSIXError {
        return String(cString: strerror(posix.code.rawValue))
    }
    return "\(error)"
}
