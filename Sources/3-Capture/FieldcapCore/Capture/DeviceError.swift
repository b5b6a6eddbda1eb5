#if canImport(Glibc)
    import Glibc
#endif

/// A device failed: which device, in which operation, the errno (0 when there is none), and what
/// to do about it. Every capture source reports its failures in this one shape, so a front end
/// prints them the same way: `/dev/video0: VIDIOC_S_FMT: Device or resource busy (errno 16);
/// another program is using the camera`.
public struct DeviceError: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// No such device, channel, trigger or control.
        case notFound
        case permissionDenied
        /// Another program holds it.
        case busy
        /// It cannot do what was asked (a format, a size, a rate, no buffer).
        case unsupported
        /// The node is not the kind of device asked for (not a camera, not an IIO device).
        case notADevice
        /// It went away (unplugged, driver unbound).
        case gone
        /// It delivered nothing for longer than its stall limit.
        case stalled
        case other
    }

    public var code: Code
    /// The device as the user named it (`/dev/video0`, `dummy0 (iio:device0)`).
    public var device: String
    /// The call or step that failed (`VIDIOC_S_FMT`, `set rate 200 Hz`).
    public var operation: String
    /// The errno the system gave, or 0 when the failure is fieldcap's own finding.
    public var errno: Int32
    /// What the user can do about it; empty when there is nothing to add.
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

    /// The hint for a device that went away.
    public static let goneHint = "the device is gone (unplugged?)"

    /// A stream that delivered nothing for `timeoutNs`: the same failure, named the same way, for
    /// every kind of device.
    public static func stalled(device: String, timeoutNs: UInt64, what: String) -> DeviceError {
        DeviceError(
            code: .stalled, device: device, operation: "capture",
            hint: "no \(what) for \(timeoutNs / 1_000_000) ms: the device stalled or was disconnected")
    }
}
