import Glibc

/// Blocks signals for the whole process and takes them synchronously, in one place. Its set is
/// written once, at init: any thread may wait on it.
final class SignalWaiter: @unchecked Sendable {
    private var set = sigset_t()

    /// Blocks `signals` in the calling thread; threads started afterwards inherit the mask.
    init(signals: [Int32]) {
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `seconds` for one of the signals; returns it, or nil on time-out.
    func wait(seconds: Double) -> Int32? {
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&set, nil, &timeout)
        return received > 0 ? received : nil
    }
}
