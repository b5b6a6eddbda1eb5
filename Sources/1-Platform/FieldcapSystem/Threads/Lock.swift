import Glibc

/// A mutex for state that callers on any thread touch briefly: what NSLock is on Linux (a
/// pthread mutex), without Foundation. Inlinable: the SDK takes it on every `record` call.
public final class Lock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable public func lock() { pthread_mutex_lock(mutex) }

    @inlinable public func unlock() { pthread_mutex_unlock(mutex) }
}
