import FieldcapSystem
import Glibc
import SyncField

// Standard error and the JSON lines on standard output are written straight to their file
// descriptors, each text in one go, past `print`'s buffer: what Foundation's `FileHandle` did
// (it is not in FoundationEssentials). A rig reading `--json` through a pipe gets each line as it
// is made, and a status line's `\r` and erase codes reach the terminal at once.

/// A line on standard error: what a command tells its user beside its output.
func say(_ line: String) {
    writeStandardError(line + "\n")
}

/// A command's `Error:` line for a problem found in `validate()`, unless the user asked for help.
/// ArgumentParser validates a command before it looks for `--help`, and shows the help when the
/// validation fails: `fieldcap record --help` with no devices would print "nothing to record"
/// above it.
func sayValidationError(_ message: String) {
    let arguments = CommandLine.arguments.dropFirst().prefix { $0 != "--" }
    guard !arguments.contains(where: { $0 == "--help" || $0 == "-h" }) else { return }
    say("Error: \(message)")
}

/// `text` on standard error as it is, with no newline added.
func writeStandardError(_ text: String) {
    writeFully(Array(text.utf8), to: STDERR_FILENO)
}

/// `bytes` on standard output now, ahead of anything `print` still holds in its buffer.
func writeStandardOutput(_ bytes: [UInt8]) {
    writeFully(bytes, to: STDOUT_FILENO)
}

/// Writes until every byte is out. A stream that fails (a closed descriptor) loses the rest:
/// there is nowhere left to say so.
private func writeFully(_ bytes: [UInt8], to fd: Int32) {
    bytes.withUnsafeBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = SystemCall.retryingInterrupts { write(fd, bytes.baseAddress! + offset, bytes.count - offset) }
            if written < 0 { return }
            offset += written
        }
    }
}

/// Says `line` and exits 1 at once, for a recording whose stop was given up on a disk that
/// stopped answering. Standard error may be a file on that disk, which holds every writer back
/// too (the kernel throttles them while the share's pages cannot be written): the exit does not
/// wait for the message more than 2 s.
func exitGivingUp(saying line: String) -> Never {
    detachThread(named: "fc-exit") {
        usleep(2_000_000)
        _exit(1)
    }
    say(line)
    _exit(1)
}
