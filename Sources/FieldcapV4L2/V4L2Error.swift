#if canImport(Glibc)
import Glibc
#endif

/// A V4L2 failure: the device, the operation and the errno, with what to do about it.
public struct V4L2Error: Error, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case notFound, permissionDenied, busy, notACamera, gone, other
    }

    public var code: Code
    public var device: String
    public var operation: String
    public var errno: Int32
    public var hint: String

    public var description: String {
        let cause = errno == 0 ? "" : ": \(String(cString: strerror(errno))) (errno \(errno))"
        return "\(operation) on \(device)\(cause)" + (hint.isEmpty ? "" : "; \(hint)")
    }

    /// Opening failed.
    static func open(device: String, errno code: Int32) -> V4L2Error {
        switch code {
        case ENOENT, ENXIO:
            return V4L2Error(code: .notFound, device: device, operation: "open", errno: code,
                             hint: "no such device: `fieldcap list` shows the cameras present")
        case EACCES, EPERM:
            return V4L2Error(code: .permissionDenied, device: device, operation: "open", errno: code,
                             hint: "add your user to the 'video' group, or install fieldcap's udev rules (udev/)")
        case EBUSY:
            return V4L2Error(code: .busy, device: device, operation: "open", errno: code,
                             hint: "another program is using the camera")
        case ENODEV:
            return V4L2Error(code: .gone, device: device, operation: "open", errno: code, hint: "the device is gone (unplugged?)")
        case ENOTTY, EINVAL:
            // libv4l2 queries the node's capabilities as it opens it: not a V4L2 device.
            return V4L2Error(code: .notACamera, device: device, operation: "open", errno: code,
                             hint: "this is not a V4L2 device; cameras are /dev/video* nodes (`fieldcap list`)")
        default:
            return V4L2Error(code: .other, device: device, operation: "open", errno: code, hint: "")
        }
    }

    /// An ioctl failed.
    static func ioctl(_ name: String, device: String, errno code: Int32) -> V4L2Error {
        switch code {
        case ENOTTY where name == "VIDIOC_QUERYCAP", EINVAL where name == "VIDIOC_QUERYCAP":
            return V4L2Error(code: .notACamera, device: device, operation: name, errno: code,
                             hint: "this is not a V4L2 device; cameras are /dev/video* nodes (`fieldcap list`)")
        case ENODEV:
            return V4L2Error(code: .gone, device: device, operation: name, errno: code, hint: "the device is gone (unplugged?)")
        case EBUSY:
            return V4L2Error(code: .busy, device: device, operation: name, errno: code, hint: "another program is using the camera")
        default:
            return V4L2Error(code: .other, device: device, operation: name, errno: code, hint: "")
        }
    }
}
