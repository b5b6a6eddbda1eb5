import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A wake-up from one thread to another that sleeps until there is work: `ring` marks work
/// and wakes the sleeper, `wait` sleeps until then and re-arms. Rings that come while the work
/// is not yet taken make one wake-up. Thread-safe.
///
/// A pipe, as `Latch` (Glibc's Swift module does not export `sys/eventfd.h`); the byte is
/// written only by the ring that finds nothing pending, so the pipe never fills.
public final class Doorbell: Sendable {
    private let pending = Atomic<Bool>(false)
    private let readDescriptor: Int32
    private let writeDescriptor: Int32

    public init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        }
        readDescriptor = ends[0]
        writeDescriptor = ends[1]
    }

    deinit {
        if readDescriptor >= 0 { close(readDescriptor) }
        if writeDescriptor >= 0 { close(writeDescriptor) }
    }

    /// Marks work and wakes the waiting thread (once, however often it is rung before it wakes).
    public func ring() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) && writeDescriptor >= 0 {
            var byte: UInt8 = 1
            _ = SystemCall.retryingInterrupts { write(writeDescriptor, &byte, 1) }
        }
    }

    /// Sleeps up to `milliseconds`, until rung, or until `latch` opens. Returns whether it was
    /// rung; the ring is then taken, so a ring after this returns wakes the next `wait`.
    public func wait(milliseconds: Int32, orUntil latch: Latch) -> Bool {
        let deadline = monotonicRawNow() &+ UInt64(max(0, milliseconds)) * 1_000_000
        // On the stack: the waiting thread allocates nothing.
        withUnsafeTemporaryAllocation(of: pollfd.self, capacity: 2) { pollers in
            pollers[0] = pollfd(fd: readDescriptor, events: Int16(POLLIN), revents: 0)
            pollers[1] = pollfd(fd: latch.descriptor, events: Int16(POLLIN), revents: 0)
            var byte: UInt8 = 0
            // `pending` is the truth; the byte only wakes `poll`, and may come after the ring that
            // wrote it was taken: such a stale byte is read away here, so it cannot keep `poll`
            // awake.
            while !pending.load(ordering: .acquiring) && !latch.isOpen {
                let now = monotonicRawNow()
                guard now < deadline else { return }
                _ = poll(pollers.baseAddress, 2, Int32((deadline - now + 999_999) / 1_000_000))
                if pollers[0].revents != 0 { while read(readDescriptor, &byte, 1) == 1 {} }
            }
        }
        guard pending.load(ordering: .acquiring) else { return false }
        pending.store(false, ordering: .releasing)
        return true
    }
}
