import FieldcapOutput
import FieldcapSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The writer thread of one run: drains the queue, encodes lines, writes them in batches, and
/// at least once per `syncIntervalNs` hands every batch to the kernel and asks the sync thread
/// (`FileSyncer`) to make the files durable. The writer itself never waits for a sync: a file
/// whose `fdatasync` takes seconds (a slow card, a disk busy with video) delays no other
/// stream's lines and no caller.
///
/// Thread-bound (writer) between `start` and `finish`; `finish` joins the thread, after which
/// the caller may read `lineCounts` and `failure`.
final class SessionWriter: @unchecked Sendable {
    /// The writer's view of one stream in this run.
    private final class StreamFiles {
        let state: StreamState
        var timestamps: OutputFile?
        var sensor: OutputFile?
        var lineCount = 0
        let planCache = ChannelEncoder.PlanCache()

        init(state: StreamState) { self.state = state }
    }

    private let queue: EntryQueue
    private let registry: StreamRegistry
    private let encoder: LineEncoder
    private let directory: String
    private let options: SyncSession.Options
    private let watch: DiskWatch
    private var streams: [StreamFiles?] = []
    private let scratch = OutputBytes(capacity: 4096)
    private lazy var channelEncoder = ChannelEncoder(out: scratch)
    private var thread: DedicatedThread?
    /// Makes the files durable; started with the writer, finished by it.
    private var syncer: FileSyncer?

    /// Set by `finish`: the position after the last accepted entry. -1 while running.
    private let finalPosition = Atomic<Int>(-1)
    /// Opened by `finish`, so that an idle writer ends at once rather than after its sleep.
    private let finishing = Latch()
    /// Rung by a caller that would rather the writer drained now than after its sleep (a fed
    /// stream waiting for room in the queue).
    let nudge = Doorbell()
    /// Raised once a file fails, so callers learn of it on their next call.
    private let failureFlag: SyncSession.FailureFlag

    private(set) var failure: SyncFieldError?
    private(set) var lineCounts: [Int: Int] = [:]

    init(
        queue: EntryQueue, registry: StreamRegistry, hostId: String, directory: String,
        options: SyncSession.Options, watch: DiskWatch, failureFlag: SyncSession.FailureFlag
    ) {
        self.watch = watch
        self.failureFlag = failureFlag
        self.queue = queue
        self.registry = registry
        self.encoder = LineEncoder(hostId: hostId)
        self.directory = directory
        self.options = options
    }

    /// The writer's POSIX thread while it runs (for tests that watch what it does).
    var pthread: pthread_t? { thread?.thread }

    func start() {
        syncer = FileSyncer()
        thread = DedicatedThread(name: "fc-syncfield") { [self] in run() }
    }

    /// The sync thread's POSIX thread while it runs (for tests that watch what it does).
    var syncPthread: pthread_t? { syncer?.pthread }

    /// Waits until every entry before `position` is written, closes the files and joins.
    func finish(at position: Int) {
        finalPosition.store(position, ordering: .releasing)
        finishing.open()
        thread?.join()
        thread = nil
    }

    private func run() {
        var lastSync = MonotonicClock.now()
        while true {
            let taken = queue.drain(limit: 4096) { entry, channels in handle(entry, channels: channels) }
            let now = MonotonicClock.now()
            if now &- lastSync >= options.syncIntervalNs {
                forEachFile { $0.writePending() }
                syncer?.requestSync()
                noteFailures()
                lastSync = now
            }
            if taken == 0 {
                let final = finalPosition.load(ordering: .acquiring)
                if final >= 0 && queue.head >= final { break }
                // Never past the next sync: `syncIntervalNs` is a promise.
                let untilSync = options.syncIntervalNs &- min(options.syncIntervalNs, MonotonicClock.now() &- lastSync)
                let sleepNs = min(options.idlePollNs, untilSync)
                if finishing.isOpen {
                    finishing.idle(nanoseconds: sleepNs)
                } else {
                    _ = nudge.wait(milliseconds: Int32(max(1, sleepNs / 1_000_000)), orUntil: finishing)
                }
            }
        }
        // No sync runs once the sync thread is joined: the files are synced and closed here.
        syncer?.finish()
        forEachFile { $0.close() }
        noteFailures()
        for (index, files) in streams.enumerated() {
            guard let files, files.timestamps != nil else { continue }
            lineCounts[index] = files.lineCount
        }
    }

    /// One of the session's files, its writes and syncs timed by the session's `DiskWatch`.
    private func outputFile(path: String, fd: Int32) -> OutputFile {
        OutputFile(
            path: path, fd: fd, batchBytes: options.batchBytes, writeTimer: watch.timer(path: path, operation: .write),
            syncTimer: watch.timer(path: path, operation: .sync))
    }

    private func forEachFile(_ body: (OutputFile) -> Void) {
        // By index: a for-in loop's iterator allocated in debug builds, at every sync.
        var index = 0
        while index < streams.count {
            if let file = streams[index]?.timestamps { body(file) }
            if let file = streams[index]?.sensor { body(file) }
            index += 1
        }
    }

    private func noteFailures() {
        guard failure == nil else { return }
        forEachFile { file in
            if failure == nil, let fileFailure = file.failure { failure = SyncFieldError(fileFailure) }
        }
        if let failure { failureFlag.raise(failure) }
    }

    private func files(for index: Int) -> StreamFiles {
        while streams.count <= index { streams.append(nil) }
        if let files = streams[index] { return files }
        let files = StreamFiles(state: registry.table.all[index])
        streams[index] = files
        return files
    }

    @inline(__always)
    private func handle(_ entry: borrowing QueueEntry, channels: consuming [String: Any]?) {
        guard entry.kind != .void else { return }
        let index = Int(entry.streamIndex)
        let files = files(for: index)
        let state = files.state
        if files.timestamps == nil {
            let file = outputFile(
                path: "\(directory)/\(SyncFieldFiles.timestamps(state.id))", fd: state.timestampsFD)
            files.timestamps = file
            syncer?.add(file.syncState)
        }
        let timestamps = files.timestamps!
        let lineStart = timestamps.pending.count
        let tail = encoder.appendTimestampLine(
            to: timestamps.pending, captureNs: entry.captureNs, frameNumber: entry.frameNumber,
            uncertaintyNs: entry.uncertaintyNs)
        files.lineCount += 1
        defer { if timestamps.pending.count >= options.batchBytes { timestamps.writePending() } }

        guard entry.kind != .stamp else { return }
        if files.sensor == nil {
            let file = outputFile(path: "\(directory)/\(SyncFieldFiles.sensor(state.id))", fd: state.sensorFD)
            files.sensor = file
            syncer?.add(file.syncState)
        }
        let sensor = files.sensor!
        LineEncoder.appendSensorHead(to: sensor.pending, sharing: timestamps.pending, lineStart: lineStart, tail: tail)
        if entry.kind == .recordFixed {
            state.fixedLayout!.appendObject(values: entry.values, to: sensor.pending)
        } else {
            scratch.removeAll()
            channelEncoder.encode(channels!, cache: files.planCache)
            sensor.pending.append(contentsOf: scratch)
        }
        LineEncoder.appendSensorTail(to: sensor.pending, sharing: timestamps.pending, tail: tail)
        if sensor.pending.count >= options.batchBytes { sensor.writePending() }
    }
}
