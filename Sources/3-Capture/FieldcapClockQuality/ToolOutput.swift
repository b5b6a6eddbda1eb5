import FieldcapSystem
import Glibc
import SyncField

/// A system tool run to its end, or killed at a deadline: what it printed, and how it ended.
/// chronyc and pmc are how chronyd and ptp4l are meant to be asked; a tool that hangs (a daemon
/// that does not answer) must not hold a recording's start.
struct ToolOutput: Sendable {
    enum Ending: Equatable, Sendable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed at the deadline.
        case timedOut
        /// posix_spawn failed (no such program): its errno.
        case notStarted(Int32)
    }

    var stdout: String
    var ending: Ending

    var succeeded: Bool { ending == .exited(0) }

    /// Runs `path` with `arguments`, stdin and stderr on /dev/null, reading stdout until it closes
    /// or `timeoutNs` passes (then the tool is killed). Output beyond `limit` bytes is dropped.
    static func run(_ path: String, _ arguments: [String], timeoutNs: UInt64, limit: Int = 1 << 16) -> ToolOutput {
        var pipeEnds: [Int32] = [-1, -1]
        // pipe2 is _GNU_SOURCE, which Glibc's module does not define; the window before
        // FD_CLOEXEC only matters to another thread's spawn, and the capture threads spawn nothing.
        guard pipe(&pipeEnds) == 0 else { return ToolOutput(stdout: "", ending: .notStarted(errno)) }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // The recorder's threads block SIGINT and SIGTERM (a signal thread waits for them); the
        // tool gets an empty mask and default actions, as from a shell.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
        close(pipeEnds[1])
        defer { close(pipeEnds[0]) }
        guard spawned == 0 else { return ToolOutput(stdout: "", ending: .notStarted(spawned)) }

        let deadline = MonotonicClock.now() + timeoutNs
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timedOut = false
        while true {
            // The time left is taken again for each call: a poll a signal interrupted waits no longer
            // than the deadline.
            let ready = SystemCall.retryingInterrupts { () -> Int32 in
                let left = deadline > MonotonicClock.now() ? deadline - MonotonicClock.now() : 0
                var poller = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
                return poll(&poller, 1, Int32(min(left / 1_000_000 + 1, 60_000)))
            }
            if ready <= 0 {
                if MonotonicClock.now() >= deadline {
                    timedOut = true
                    break
                }
                continue
            }
            let count = SystemCall.retryingInterrupts {
                buffer.withUnsafeMutableBytes { read(pipeEnds[0], $0.baseAddress, $0.count) }
            }
            if count <= 0 { break }
            if bytes.count < limit { bytes += buffer[0..<min(count, limit - bytes.count)] }
        }
        if timedOut { kill(pid, SIGKILL) }
        var status: Int32 = 0
        _ = SystemCall.retryingInterrupts { waitpid(pid, &status, 0) }
        let output = String(decoding: bytes, as: UTF8.self)
        if timedOut { return ToolOutput(stdout: output, ending: .timedOut) }
        let signal = status & 0x7f
        return ToolOutput(stdout: output, ending: signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal))
    }

}
