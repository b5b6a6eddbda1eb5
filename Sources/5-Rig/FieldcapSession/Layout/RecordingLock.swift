import FieldcapCore
import FieldcapSegments
import FieldcapSystem
import FoundationEssentials
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// Who is recording into a directory. The recorder holds an exclusive `flock` on its session's
/// (or segmented recording's) directory for as long as it writes there, and the kernel lets go
/// when the process ends, however it ends: so "being recorded" and "killed, needs recover" tell
/// apart without a PID file that a crash would leave behind, and `sessions rm` and `recover`
/// keep their hands off a live directory.
///
/// Not thread-safe: taken and released by the thread that drives the recording.
public final class RecordingLock {
    public let directory: String
    private var fd: Int32

    /// Why a directory could not be locked.
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// Locks `directory`, a directory this process has just made: no other recorder can hold it,
    /// and a reader's probe (`isHeld`) holds it for an instant, so this waits rather than fails.
    public init(directory: String) throws {
        self.directory = directory
        fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw Failure(
                message: "\(directory): cannot open it to lock it: \(String(cString: strerror(code))) (errno \(code))")
        }
        if SystemCall.retryingInterrupts({ flock(fd, LOCK_EX) }) != 0 {
            let code = errno
            Glibc.close(fd)
            fd = -1
            throw Failure(message: "\(directory): cannot lock it: \(String(cString: strerror(code))) (errno \(code))")
        }
    }

    deinit { release() }

    public func release() {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    /// Whether a recorder holds `directory` now (a directory that cannot be opened is not held).
    public static func isHeld(directory: String) -> Bool {
        let probe = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard probe >= 0 else { return false }
        defer { Glibc.close(probe) }
        return flock(probe, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK
    }

    /// Whether `directory`, or the segmented recording it is a segment of, is being recorded.
    public static func isLive(_ directory: String) -> Bool {
        if isHeld(directory: directory) { return true }
        let parent = PathName.directory(of: directory)
        return FileManager.default.fileExists(atPath: "\(parent.isEmpty ? "." : parent)/\(RecordingIndex.fileName)")
            && isHeld(directory: parent.isEmpty ? "." : parent)
    }

    /// Throws, naming `directory` and what was not done, when it is live (`isLive`).
    public static func refuseIfLive(_ directory: String, doing what: String) throws {
        guard isLive(directory) else { return }
        throw Failure(
            message:
                "\(directory) is being recorded right now; \(what) once that fieldcap has stopped (nothing changed)")
    }
}
