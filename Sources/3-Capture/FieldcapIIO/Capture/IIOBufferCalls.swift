import CIIO

#if canImport(Glibc)
    import Glibc
#endif

/// The calls the capture loop makes on an enabled IIO buffer: libiio's, or in tests a script that
/// plays a device (`DeviceCalls` is the cameras' counterpart). The kernel rig proves libiio and
/// the real drivers; this lets every decision of the loop be tested without them.
///
/// Conventions are libiio's and the kernel's: `refill` returns the bytes read or a negative errno
/// (`-EAGAIN` when nothing has come), `poll` returns -1 with `errno` set on failure.
public protocol IIOBufferCalls: AnyObject {
    /// The descriptor the kernel wakes when samples come.
    var pollDescriptor: Int32 { get }
    /// Reads what the kernel has into the buffer.
    func refill() -> Int
    /// What the last `refill` read: the first scan, how many scans, the bytes from one to the next.
    func scans() -> (first: UnsafeRawPointer, count: Int, step: Int)
    /// `poll(2)`.
    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32
}

/// An enabled buffer through libiio.
final class LibIIOBuffer: IIOBufferCalls {
    let buffer: OpaquePointer

    init(_ buffer: OpaquePointer) { self.buffer = buffer }

    var pollDescriptor: Int32 { iio_buffer_get_poll_fd(buffer) }

    func refill() -> Int { iio_buffer_refill(buffer) }

    func scans() -> (first: UnsafeRawPointer, count: Int, step: Int) {
        let first = iio_buffer_start(buffer)!
        let step = iio_buffer_step(buffer)
        return (UnsafeRawPointer(first), step > 0 ? (iio_buffer_end(buffer)! - first) / step : 0, step)
    }

    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32 {
        Glibc.poll(descriptors, nfds_t(count), timeoutMs)
    }
}
