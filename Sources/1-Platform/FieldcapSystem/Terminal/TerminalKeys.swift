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
    /// pipe, a file, a service's /dev/null), when this process is not the terminal's foreground
    /// job (`fieldcap record ... &`: changing the terminal's mode from the background would stop
    /// the process with SIGTTOU), or when its mode cannot be set.
    public init?(descriptor: Int32 = STDIN_FILENO) {
        guard isatty(descriptor) == 1, tcgetpgrp(descriptor) == getpgrp() else { return nil }
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

    /// Whether this process is the terminal's foreground job now (a job put in the background
    /// with Ctrl-Z and `bg` is not: reading would stop it with SIGTTIN).
    var inForeground: Bool { tcgetpgrp(descriptor) == getpgrp() }

    /// The next key pressed within `timeoutMs`, nil when none was (or the terminal went away, or
    /// the process is in the background).
    public func read(timeoutMs: Int32) -> UInt8? {
        guard inForeground else {
            usleep(UInt32(max(0, timeoutMs)) * 1000)
            return nil
        }
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

    /// Puts the terminal back as it was (from the background too: SIGTTOU is held off for the
    /// call, as a shell does when it gives a terminal back).
    public func restore() {
        guard !restored else { return }
        restored = true
        var hold = sigset_t()
        var previous = sigset_t()
        sigemptyset(&hold)
        sigaddset(&hold, SIGTTOU)
        pthread_sigmask(SIG_BLOCK, &hold, &previous)
        _ = tcsetattr(descriptor, TCSANOW, &saved)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }
}
