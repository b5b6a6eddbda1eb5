import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// V4L2's failures, in the shape every device reports them.
public typealias V4L2Error = DeviceError

extension DeviceError {
    static let notACameraHint = "this is not a V4L2 device; cameras are /dev/video* nodes (`fieldcap list`)"

    /// Opening failed.
    static func open(device: String, errno code: Int32) -> DeviceError {
        switch code {
        case ENOENT, ENXIO:
            return DeviceError(
                code: .notFound, device: device, operation: "open", errno: code,
                hint: "no such device: `fieldcap list` shows the cameras present")
        case EACCES, EPERM:
            return DeviceError(
                code: .permissionDenied, device: device, operation: "open", errno: code,
                hint: "add your user to the 'video' group, or install fieldcap's udev rules (udev/)")
        case EBUSY:
            return DeviceError(
                code: .busy, device: device, operation: "open", errno: code, hint: "another program is using the camera"
            )
        case ENODEV:
            return .gone("open", device: device, errno: Errno(code))
        case ENOTTY, EINVAL:
            // libv4l2 queries the node's capabilities as it opens it: not a V4L2 device.
            return DeviceError(code: .notADevice, device: device, operation: "open", errno: code, hint: notACameraHint)
        default:
            return DeviceError(code: .other, device: device, operation: "open", errno: code)
        }
    }

    /// An ioctl failed.
    /// The device went away, as `operation`'s `errno` says.
    static func gone(_ operation: String, device: String, errno: Errno) -> DeviceError {
        DeviceError(code: .gone, device: device, operation: operation, errno: errno.rawValue, hint: goneHint)
    }

    static func ioctl(_ name: String, device: String, errno code: Int32) -> DeviceError {
        switch code {
        case ENOTTY where name == "VIDIOC_QUERYCAP", EINVAL where name == "VIDIOC_QUERYCAP":
            return DeviceError(code: .notADevice, device: device, operation: name, errno: code, hint: notACameraHint)
        case ENODEV:
            return .gone(name, device: device, errno: Errno(code))
        case EBUSY:
            return DeviceError(
                code: .busy, device: device, operation: name, errno: code, hint: "another program is using the camera")
        default:
            return DeviceError(code: .other, device: device, operation: name, errno: code)
        }
    }
}
