import FieldcapCore

#if canImport(Glibc)
    import Glibc
#endif

/// IIO's failures, in the shape every device reports them.
public typealias IIOError = DeviceError

extension DeviceError {
    static let permissionHint =
        "buffered capture writes the device's sysfs attributes: install fieldcap's "
        + "udev rules (udev/README.md) and join their group, or run as root"

    /// A system call or libiio call failed with `code` (a positive errno).
    static func system(_ operation: String, device: String, errno code: Int32) -> DeviceError {
        switch code {
        case EACCES, EPERM:
            return DeviceError(
                code: .permissionDenied, device: device, operation: operation, errno: code, hint: permissionHint)
        case EBUSY:
            return DeviceError(
                code: .busy, device: device, operation: operation, errno: code,
                hint: "another program is capturing from it (its buffer is enabled)")
        case ENODEV, ENXIO:
            return DeviceError(code: .gone, device: device, operation: operation, errno: code, hint: goneHint)
        case ENOENT:
            return DeviceError(code: .notFound, device: device, operation: operation, errno: code)
        default:
            return DeviceError(code: .other, device: device, operation: operation, errno: code)
        }
    }
}
