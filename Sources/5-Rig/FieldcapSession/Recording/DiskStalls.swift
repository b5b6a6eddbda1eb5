import SyncField

/// Where a status line learns that the disk stalls: one session's `DiskWatch`, or a segmented
/// recording's segments, each of which times its own files.
public protocol DiskStalls: Sendable {
    /// An operation this long or longer is a stall.
    var stallNs: UInt64 { get }
    /// Stalls going on now, and those that ended since the last call (for one reader).
    func takeRecentStalls() -> [DiskWatch.Stall]
    /// Every file's stalls over the recording so far.
    func summary() -> [DiskWatch.Summary]
}

extension DiskWatch: DiskStalls {
    public func takeRecentStalls() -> [DiskWatch.Stall] { takeRecentStalls(now: MonotonicClock.now()) }
}
