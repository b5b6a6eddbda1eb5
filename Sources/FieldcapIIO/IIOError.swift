#if canImport(Glibc)
import Glibc
#endif

/// An IIO failure: the device, the operation and the errno, with what to do about it.
public struct IIOError: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// No such device, channel or trigger.
        case notFound
        /// The device or trigger cannot do what was asked (no buffer, a refused rate...).
        case unsupported
        case permissionDenied
        case busy
        /// The device went away during capture.
        case gone
        /// No sample for longer than the stall limit.
        case stalled
        case other
    }

    public var code: Code
    public var device: String
    public var operation: String
    public var errno: Int32
    public var hint: String

    public init(code: Code, device: String, operation: String, errno: Int32 = 0, hint: String = "") {
        self.code = code
        self.device = device
        self.operation = operation
        self.errno = errno
        self.hint = hint
    }

    public var description: String {
        let cause = errno == 0 ? "" : ": \(String(cString: strerror(errno))) (errno \(errno))"
        return "\(device): \(operation)\(cause)" + (hint.isEmpty ? "" : "; \(hint)")
    }

    static let permissionHint =
        "buffered capture writes the device's sysfs attributes: install fieldcap's udev rules (udev/README.md) and join their group, or run as root"

    /// A system call or libiio call failed with `code` (a positive errno).
    static func system(_ operation: String, device: String, errno code: Int32) -> IIOError {
        switch code {
        case EACCES, EPERM:
            return IIOError(code: .permissionDenied, device: device, operation: operation, errno: code, hint: permissionHint)
        case EBUSY:
            return IIOError(code: .busy, device: device, operation: operation, errno: code,
                            hint: "another program is capturing from it (its buffer is enabled)")
        case ENODEV, ENXIO:
            return IIOError(code: .gone, device: device, operation: operation, errno: code, hint: "the device is gone (unplugged?)")
        case ENOENT:
            return IIOError(code: .notFound, device: device, operation: operation, errno: code, hint: "")
        default:
            return IIOError(code: .other, device: device, operation: operation, errno: code)
        }
    }
}
