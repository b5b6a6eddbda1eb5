import FieldcapCore
import Testing

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// What each errno means to a user, without a device: the code, and a hint that says what to do.
@Suite("V4L2 errors")
struct V4L2ErrorTests {
    @Test(
        "opening: each errno becomes the failure it is, with a hint",
        arguments: [
            (ENOENT, DeviceError.Code.notFound, "fieldcap list"), (ENXIO, .notFound, "fieldcap list"),
            (EACCES, .permissionDenied, "video' group"), (EPERM, .permissionDenied, "udev rules"),
            (EBUSY, .busy, "another program"), (ENODEV, .gone, "unplugged"),
            (ENOTTY, .notADevice, "not a V4L2 device"), (EINVAL, .notADevice, "not a V4L2 device"),
        ] as [(Int32, DeviceError.Code, String)])
    func open(errno code: Int32, expected: DeviceError.Code, hint: String) {
        let error = DeviceError.open(device: "/dev/video7", errno: code)
        #expect(error.code == expected)
        #expect(error.description.hasPrefix("/dev/video7: open: \(String(cString: strerror(code))) (errno \(code)); "))
        #expect(error.description.contains(hint))
    }

    @Test("an ioctl's errno: the node is no camera only when it fails QUERYCAP; ENODEV is a device gone")
    func ioctl() {
        #expect(DeviceError.ioctl("VIDIOC_QUERYCAP", device: "/dev/video0", errno: ENOTTY).code == .notADevice)
        #expect(DeviceError.ioctl("VIDIOC_S_FMT", device: "/dev/video0", errno: ENOTTY).code == .other)
        #expect(DeviceError.ioctl("VIDIOC_DQBUF", device: "/dev/video0", errno: ENODEV).code == .gone)
        #expect(DeviceError.ioctl("VIDIOC_STREAMON", device: "/dev/video0", errno: EBUSY).code == .busy)
        let plain = DeviceError.ioctl("VIDIOC_S_PARM", device: "/dev/video0", errno: EIO)
        #expect(plain.description == "/dev/video0: VIDIOC_S_PARM: \(String(cString: strerror(EIO))) (errno \(EIO))")
    }

    @Test("a stall and a vanished device are named the same way for every kind of device")
    func stallAndGone() {
        let stall = DeviceError.stalled(device: "/dev/video0", timeoutNs: 2_000_000_000, what: "frame")
        #expect(stall.code == .stalled)
        #expect(
            stall.description == "/dev/video0: capture; no frame for 2000 ms: the device stalled or was disconnected")
        #expect(
            DeviceError(code: .gone, device: "x", operation: "poll", errno: ENODEV, hint: DeviceError.goneHint)
                .description
                .hasSuffix("; the device is gone (unplugged?)"))
    }

    @Test("a node that is not a character device is refused before it is opened")
    func notADeviceNode() {
        let directory = #expect(throws: DeviceError.self) { try V4L2Device(path: "/") }
        #expect(directory?.code == .notADevice)
        #expect(directory?.hint.contains("a directory") == true)
        let missing = #expect(throws: DeviceError.self) { try V4L2Device(path: "/nonexistent/video0") }
        #expect(missing?.code == .notFound)
    }
}
