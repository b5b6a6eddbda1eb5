#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A named POSIX thread that runs one closure, for work that blocks or loops for the life of a
/// session (the writer). Not a Dispatch queue: the thread must exist for the whole run, be
/// visible by name in `top -H`, and be joined at stop.
public final class DedicatedThread {
    private final class Box {
        let name: String
        let body: () -> Void
        init(name: String, body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    /// The POSIX thread, for tests that watch what it does.
    public private(set) var thread = pthread_t()
    private var joined = false

    /// Starts the thread. `name` is cut to the kernel's 15-byte limit.
    public init(name: String, _ body: @escaping () -> Void) {
        let box = Unmanaged.passRetained(Box(name: name, body: body)).toOpaque()
        let result = pthread_create(
            &thread, nil,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                DedicatedThread.nameCurrentThread(box.name)
                box.body()
                return nil
            }, box)
        precondition(result == 0, "pthread_create failed: errno \(result)")
    }

    /// Names the calling thread (as `top -H` and `ps -L` show it). Glibc hides
    /// `pthread_setname_np` behind `_GNU_SOURCE` and `prctl` is variadic, so this writes the
    /// kernel's own file for it.
    public static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { bytes in
            SystemCall.retryingInterrupts { write(fd, bytes.baseAddress, bytes.count) }
        }
        close(fd)
    }

    /// Waits for the thread to finish.
    public func join() {
        guard !joined else { return }
        joined = true
        pthread_join(thread, nil)
    }

    deinit { precondition(joined, "a DedicatedThread must be joined") }
}
