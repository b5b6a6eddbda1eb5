import CV4L2
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// libv4l2's calls, which cameras are driven through: it asks the node's capabilities as it
/// opens it, and fieldcap opens it with format conversion off (`CV4L2_open`), so frames stay
/// the device's own, zero-copy.
public struct LibV4L2Calls: DeviceCalls {
    public init() {}

    public func open(_ path: String, _ flags: Int32) -> Int32 { CV4L2_open(path, flags) }
    public func close(_ descriptor: Int32) -> Int32 { CV4L2_close(descriptor) }
    public func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        // An export goes to the kernel: libv4l2 has nothing to add to it.
        request == CV4L2_VIDIOC_EXPBUF()
            ? CV4L2_codec_ioctl(descriptor, request, argument) : CV4L2_ioctl(descriptor, request, argument)
    }
    public func mmap(_ descriptor: Int32, length: Int, offset: Int64) -> UnsafeMutableRawPointer? {
        let start = CV4L2_mmap(descriptor, length, offset)
        return start == MAP_FAILED ? nil : start
    }
    public func munmap(_ start: UnsafeMutableRawPointer, length: Int) -> Int32 { CV4L2_munmap(start, length) }
    public func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32 {
        Glibc.poll(descriptors, nfds_t(count), timeoutMs)
    }
}
