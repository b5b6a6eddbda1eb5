#if canImport(Glibc)
    import Glibc
#endif

/// Single keys from the terminal a command runs in, as they are pressed: the terminal is put in
/// non-canonical mode without echo (Ctrl-C still sends SIGINT) until `restore`.
///
/// Thread-bound: `read` from one thread; `restore` once that thread is done.
public final class TerminalKeys {
    public let descriptor: Int32
    private var saved: termios
    private var restored = false

    /// Keys from `descriptor` (standard input by default), or nil when it is not a terminal (a
    /// pipe, a file, a service's /dev/null) or its mode cannot be set.
    public init?(descriptor: Int32 = STDIN_FILENO) {
        guard isatty(descriptor) == 1 else { return nil }
        var mode = termios()
        guard tcgetattr(descriptor, &mode) == 0 else { return nil }
        self.descriptor = descriptor
        saved = mode
        mode.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &mode.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(descriptor, TCSANOW, &mode) == 0 else { return nil }
    }

    deinit { restore() }

    /// The next key pressed within `timeoutMs`, nil when none was (or the terminal went away).
    public func read(timeoutMs: Int32) -> UInt8? {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        let ready = descriptors.withUnsafeMutableBufferPointer { buffer in
            SystemCall.retryingInterrupts { poll(buffer.baseAddress, 1, timeoutMs) }
        }
        guard ready > 0 else { return nil }
        if descriptors[0].revents & Int16(POLLIN) == 0 {
            // Hung up: wait out the time rather than spin.
            usleep(UInt32(max(0, timeoutMs)) * 1000)
            return nil
        }
        var key: UInt8 = 0
        let count = SystemCall.retryingInterrupts { Glibc.read(descriptor, &key, 1) }
        return count == 1 ? key : nil
    }

    /// Puts the terminal back as it was.
    public func restore() {
        guard !restored else { return }
        restored = true
        _ = tcsetattr(descriptor, TCSANOW, &saved)
    }
}
