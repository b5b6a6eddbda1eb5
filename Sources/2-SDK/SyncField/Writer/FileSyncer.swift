import FieldcapOutput
import FieldcapSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The thread that makes a session's files durable, so that the writer thread never waits for
/// the disk: the writer hands its batches to the kernel (`write(2)` into the page cache, which
/// took at most 45 ms in the kernel rig even while the disk stood still for 3 s) and rings this
/// thread, which `fdatasync`s each file written since its last sync. On a disk shared with
/// video, a sync waits behind the video's writes: 0.5–0.8 s per file at 2 MB/s, 3.2 s through a
/// 3 s stall. Done by the writer, that time was taken from draining the queue, and a 1 kHz IMU
/// lost samples behind a camera's timestamp file.
///
/// A slow sync delays when the lines become durable, never whether they are written.
///
/// Thread-safe: `add` and `requestSync` from the writer thread; `finish` once, from the thread
/// that ends the run, after which no sync runs and the files may be closed.
final class FileSyncer: @unchecked Sendable {
    /// Files in the order they were added; only ever appended to.
    private let files = Mutex<[FileSyncState]>([])
    private let doorbell = Doorbell()
    private let finishing = Latch()
    /// Started in `init`, joined by `finish`.
    private var thread: DedicatedThread?

    init() {
        thread = DedicatedThread(name: "fc-sf-sync") { [self] in run() }
    }

    /// The sync thread's POSIX thread while it runs (for tests that watch what it does).
    var pthread: pthread_t? { thread?.thread }

    /// Syncs `file` from the next round on.
    func add(_ file: FileSyncState) {
        files.withLock { $0.append(file) }
    }

    /// Asks for a round: every file written since its last sync is synced. Rounds asked for
    /// while one runs make one more round after it.
    func requestSync() { doorbell.ring() }

    /// Ends the thread (a round in progress finishes first) and waits for it.
    func finish() {
        finishing.open()
        thread?.join()
        thread = nil
    }

    private func run() {
        while !finishing.isOpen {
            guard doorbell.wait(milliseconds: 60_000, orUntil: finishing) else { continue }
            var index = 0
            // One file at a time out of the lock: adding a file never waits for a slow sync.
            while !finishing.isOpen, let file = files.withLock({ index < $0.count ? $0[index] : nil }) {
                file.sync()
                index += 1
            }
        }
    }
}
