import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A one-way event: once opened it stays open. Threads with periodic work sleep on it and wake
/// at once when it opens, instead of waking every few milliseconds to look at a flag; threads
/// that wait in `poll` on a device put `descriptor` in their poll set. Thread-safe.
///
/// A pipe rather than an eventfd: Glibc's Swift module does not export `sys/eventfd.h`.
public final class Latch: Sendable {
    private let opened = Atomic<Bool>(false)
    private let once = Atomic<Bool>(false)
    /// Readable once the latch is open; never read from, so it stays readable.
    public let descriptor: Int32
    private let writeDescriptor: Int32

    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        }
        descriptor = ends[0]
        writeDescriptor = ends[1]
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writeDescriptor >= 0 { close(writeDescriptor) }
    }

    public func open() {
        opened.store(true, ordering: .releasing)
        // One byte, once: the pipe stays readable and never fills.
        if !once.exchange(true, ordering: .acquiringAndReleasing) && writeDescriptor >= 0 {
            var byte: UInt8 = 1
            _ = SystemCall.retryingInterrupts { write(writeDescriptor, &byte, 1) }
        }
    }

    @inline(__always)
    public var isOpen: Bool { opened.load(ordering: .acquiring) }

    /// Sleeps up to `milliseconds`, or until the latch opens; `true` once it is open.
    public func wait(milliseconds: Int32) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let deadline = monotonicRawNow() &+ UInt64(max(0, milliseconds)) * 1_000_000
        while !isOpen {
            let now = monotonicRawNow()
            guard now < deadline else { return false }
            _ = poll(&poller, 1, Int32((deadline - now + 999_999) / 1_000_000))
        }
        return true
    }

    /// One idle turn of a loop that drains work until it is told to end: sleeps up to
    /// `nanoseconds` (at least 1 ms, at most a minute), or until the latch opens. Once it is
    /// open, 1 ms: work accepted before the opening may still be landing.
    public func idle(nanoseconds: UInt64) {
        if isOpen {
            var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&pause, nil)
        } else {
            _ = wait(milliseconds: Int32(min(max(nanoseconds, 1_000_000) / 1_000_000, 60_000)))
        }
    }
}
