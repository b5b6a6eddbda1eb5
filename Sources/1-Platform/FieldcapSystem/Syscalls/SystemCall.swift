#if canImport(Glibc)
    import Glibc
#endif

/// The one policy for system calls a signal can interrupt: a call that fails with `EINTR` is made
/// again, at once, with the same arguments. fieldcap itself installs no handler: it blocks SIGINT
/// and SIGTERM and takes them with `sigtimedwait` (`SignalWaiter`). EINTR still comes: from the
/// handlers of the libraries fieldcap links, and, with no handler at all, from a stop and continue
/// (SIGSTOP, SIGCONT) during some waits (signal(7)). Whatever restarts, poll, epoll_wait and
/// nanosleep never do.
///
/// The one exception is `close`: on Linux the descriptor is released even when close reports
/// EINTR, and a retry could close a descriptor another thread has just opened. Never retry it.
public enum SystemCall {
    /// Calls `body` until it does not fail with `EINTR`: for calls that return -1 and set `errno`
    /// (read, write, ioctl, poll, epoll_wait, waitpid, flock, open). Returns the last result, with
    /// `errno` as that call left it.
    @inlinable
    public static func retryingInterrupts<Result: SignedInteger>(_ body: () -> Result) -> Result {
        while true {
            let result = body()
            if result == -1 && errno == EINTR { continue }
            return result
        }
    }

    /// The same, as a value: the result, or the `Errno` of the call that failed.
    @inlinable
    public static func valueOrErrno<Value: SignedInteger>(_ body: () -> Value) -> Swift.Result<Value, Errno> {
        let result = retryingInterrupts(body)
        return result == -1 ? .failure(.current) : .success(result)
    }

    /// Calls `body` until it does not return `EINTR`: for calls that return their error number
    /// instead of setting `errno` (clock_nanosleep, the pthread calls). Returns that number (0 on
    /// success).
    @inlinable
    public static func retryingInterruptedCode(_ body: () -> Int32) -> Int32 {
        while true {
            let code = body()
            if code != EINTR { return code }
        }
    }
}
