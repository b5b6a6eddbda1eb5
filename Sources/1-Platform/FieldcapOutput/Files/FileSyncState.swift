import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What making one file durable needs: its descriptor, whether it was written since its last
/// `fdatasync`, and the first failed sync's error. It is what the sync thread (`FileSyncer`)
/// holds of an `OutputFile`, so that thread never touches the file's batch.
///
/// Thread-safe: `noteWritten` from the thread that writes the file, `sync` from one thread at a
/// time (the sync thread while the session runs, the writer once it has joined it).
public final class FileSyncState: Sendable {
    public let path: String
    public let fd: Int32
    /// Times each sync, for a report of a stalled disk.
    private let timer: (any OperationTimer)?
    private let written = Atomic<Bool>(false)
    private let hasFailed = Atomic<Bool>(false)
    private let failed = Mutex<FileWriteError?>(nil)

    #if DEBUG
        /// Called before each `fdatasync` with the file's path: tests make a file's syncs hang.
        public final class SyncHook: Sendable {
            let body: @Sendable (String) -> Void
            public init(_ body: @escaping @Sendable (String) -> Void) { self.body = body }
        }
        /// A class, not the closure itself: a closure handed out of the lock by a generic function
        /// is re-abstracted, which allocates on the syncing thread.
        public static let beforeSyncForTesting = Mutex<SyncHook?>(nil)
    #endif

    public init(path: String, fd: Int32, timer: (any OperationTimer)? = nil) {
        self.path = path
        self.fd = fd
        self.timer = timer
    }

    /// The file was written to: the next `sync` has something to make durable.
    @inline(__always)
    public func noteWritten() { written.store(true, ordering: .releasing) }

    /// `fdatasync`s the file if it was written since the last sync. A failure is kept (EINVAL,
    /// a file that cannot be synced such as a pipe, is not one).
    public func sync() {
        // Cleared first: a write that lands during the sync is synced by the next one.
        guard written.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let started = timer?.begin()
        #if DEBUG
            // Inside the timed part: the hook stands for a slow fdatasync.
            if let hook = Self.beforeSyncForTesting.withLock({ $0 }) { hook.body(path) }
        #endif
        let synced = fdatasync(fd)
        let code = errno
        if let started { timer?.end(started) }
        if synced != 0 {
            guard code != EINVAL else { return }
            failed.withLock { if $0 == nil { $0 = FileWriteError(path: path, operation: "fdatasync", errno: code) } }
            hasFailed.store(true, ordering: .releasing)
        }
    }

    /// The first failed sync, if any.
    public var failure: FileWriteError? {
        hasFailed.load(ordering: .acquiring) ? failed.withLock { $0 } : nil
    }
}
