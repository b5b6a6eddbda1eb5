import FieldcapMedia
import FieldcapOutput
import FoundationEssentials
import Glibc
import SyncField

// The storage guard: what keeps a full disk from costing a session its ending.

/// Free space on the filesystem holding `path`, for an unprivileged writer.
public func freeBytes(at path: String) -> UInt64? {
    var stats = statvfs()
    guard statvfs(path, &stats) == 0 else { return nil }
    return UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
}

/// Space set aside in the session directory while recording, given back when the recording
/// stops: however full the disk got, the video trailers, `manifest.json`, `sync_point.json` and
/// `fieldcap.json` then have room to be written, and so do the lines still in the writers'
/// batches.
public final class DiskReserve {
    private let path: String
    private var held: Bool

    /// Room for everything a stop can still write: each stream's two SyncField files' unwritten
    /// batches (up to `batchBytes` and a line each), each camera's frame-log batch, and the
    /// session's JSON files. A video's trailer is written in place. Sized to the session rather
    /// than fixed: on tmpfs `fallocate` zeroes every page it reserves, which was 3% of a short
    /// IMU recording's CPU in the kernel rig's guest with a fixed 4 MiB.
    public static func bytes(streams: Int, cameras: Int, batchBytes: Int, frameLogBatchBytes: Int) -> Int {
        let line = 4096
        return (64 << 10) + streams * ((16 << 10) + 2 * (batchBytes + line)) + cameras * (frameLogBatchBytes + line)
    }

    public init(layout: SessionLayout, bytes: Int) {
        path = layout.reserve
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        held = fd >= 0 && posix_fallocate(fd, 0, off_t(bytes)) == 0
        if fd >= 0 { _ = fsync(fd); close(fd) }
        if !held { unlink(path) }
    }

    public func release() {
        unlink(path)
        held = false
    }

    deinit { release() }
}

/// Whether a write failed for want of space.
public func isDiskFull(_ error: Error) -> Bool {
    if case SyncFieldError.ioFailure(_, _, let code) = error { return code == ENOSPC || code == EDQUOT }
    if let failure = error as? FileWriteError { return failure.isDiskFull }
    if let media = error as? MediaError {
        return media.code == ENOSPC || media.code == -ENOSPC || media.code == EDQUOT || media.code == -EDQUOT
    }
    return "\(error)".contains("No space left")
}
