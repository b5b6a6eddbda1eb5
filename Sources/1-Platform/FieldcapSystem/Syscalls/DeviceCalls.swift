#if canImport(Glibc)
    import Glibc
#endif

/// The calls a device node is driven through: the kernel's own, a library that wraps them
/// (libv4l2, which converts formats in user space), or in tests a script that plays a driver.
///
/// Every call behaves as the kernel's does: -1 (nil for `mmap`) with `errno` set on failure. The
/// callers do not retry: `DeviceNode` applies `SystemCall`'s policy to every call but `close`.
/// This is the seam a test replaces to drive a capture loop through a device's every answer
/// (swift-system's mocked syscalls are the model), while the kernel rig proves the real drivers.
public protocol DeviceCalls: Sendable {
    func open(_ path: String, _ flags: Int32) -> Int32
    func close(_ descriptor: Int32) -> Int32
    func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32
    func mmap(_ descriptor: Int32, length: Int, offset: Int64) -> UnsafeMutableRawPointer?
    func munmap(_ start: UnsafeMutableRawPointer, length: Int) -> Int32
    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32
}

/// The kernel's calls, straight.
public struct KernelDeviceCalls: DeviceCalls {
    public init() {}

    public func open(_ path: String, _ flags: Int32) -> Int32 { Glibc.open(path, flags) }
    public func close(_ descriptor: Int32) -> Int32 { Glibc.close(descriptor) }
    public func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        Glibc.ioctl(descriptor, request, argument)
    }
    public func mmap(_ descriptor: Int32, length: Int, offset: Int64) -> UnsafeMutableRawPointer? {
        let start = Glibc.mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, descriptor, off_t(offset))
        return start == MAP_FAILED ? nil : start
    }
    public func munmap(_ start: UnsafeMutableRawPointer, length: Int) -> Int32 { Glibc.munmap(start, length) }
    public func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32 {
        Glibc.poll(descriptors, nfds_t(count), timeoutMs)
    }
}

/// An open device node and the calls that reach it, with the one retry policy applied.
///
/// Not a resource owner: whoever opened it closes it (`close()`), once.
public struct DeviceNode: Sendable {
    public let descriptor: Int32
    public let calls: any DeviceCalls

    /// Opens `path` close-on-exec, whatever `calls` are (a child fieldcap starts, FFmpeg or a
    /// hook, must not hold a camera open), retrying an interrupted open.
    public static func open(_ path: String, flags: Int32, calls: any DeviceCalls) -> Swift.Result<DeviceNode, Errno> {
        SystemCall.valueOrErrno { calls.open(path, flags | O_CLOEXEC) }.map { DeviceNode(descriptor: $0, calls: calls) }
    }

    public init(descriptor: Int32, calls: any DeviceCalls) {
        self.descriptor = descriptor
        self.calls = calls
    }

    /// `ioctl(request, &argument)`: nil on success, else the error. Inlinable: a capture loop
    /// calls it for every frame.
    @inlinable
    public func ioctl<Argument>(_ request: UInt, _ argument: inout Argument) -> Errno? {
        let result = withUnsafeMutablePointer(to: &argument) { pointer in
            SystemCall.retryingInterrupts { calls.ioctl(descriptor, request, UnsafeMutableRawPointer(pointer)) }
        }
        return result == -1 ? .current : nil
    }

    /// Maps `length` bytes at `offset`, shared, read and write.
    public func mmap(length: Int, offset: Int64) -> Swift.Result<UnsafeMutableRawPointer, Errno> {
        guard let start = calls.mmap(descriptor, length: length, offset: offset) else { return .failure(.current) }
        return .success(start)
    }

    public func munmap(_ start: UnsafeMutableRawPointer, length: Int) { _ = calls.munmap(start, length: length) }

    /// Waits for `events` on this node and, when given, for `other` to become readable (a stop's
    /// wake pipe), up to `timeoutMs`. Returns the node's events and whether `other` is readable.
    /// An interrupted wait is made again with the whole timeout, unless `retryOnInterrupt` is
    /// false: then it fails with `Errno.interrupted`, for a loop that checks a watchdog between
    /// waits. Allocates nothing: capture loops call it once a frame.
    @inlinable
    public func poll(
        events: Int16, orReadable other: Int32? = nil, timeoutMs: Int32, retryOnInterrupt: Bool = true
    ) -> Swift.Result<(node: Int16, otherReadable: Bool), Errno> {
        withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { descriptors in
            descriptors[0] = pollfd(fd: descriptor, events: events, revents: 0)
            descriptors[1] = pollfd(fd: other ?? -1, events: Int16(POLLIN), revents: 0)
            let count = other == nil ? 1 : 2
            var result: Int32
            repeat {
                result = calls.poll(descriptors.baseAddress!, count: count, timeoutMs: timeoutMs)
            } while retryOnInterrupt && result == -1 && errno == EINTR
            if result == -1 { return .failure(.current) }
            return .success((descriptors[0].revents, other != nil && descriptors[1].revents != 0))
        }
    }

    /// Closes the node, never retried (see `SystemCall`).
    public func close() { _ = calls.close(descriptor) }
}
