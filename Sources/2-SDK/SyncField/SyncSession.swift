import FieldcapOutput
import FieldcapSystem
import FoundationEssentials
import Glibc
import Synchronization

/// Captures timestamps and sensor records for multi-stream synchronization, in the SyncField 0.1
/// format, byte for byte as the SyncField Swift SDK writes it.
///
/// ```swift
/// let session = SyncSession(hostId: "rig_01", outputDir: "/data/session")
/// try session.start()
/// try session.stamp("cam_left", frameNumber: i)          // right after the frame arrived
/// try session.record("imu", frameNumber: j, channels: ["accel_x": ax, "accel_y": ay])
/// let counts = try session.stop()
/// ```
///
/// Thread-safe, like the SDK: any thread may call any method, and the lines of one stream are
/// written in the order its calls were made. Unlike the SDK, a call neither takes a contended
/// lock nor makes a system call: it reads the clock, checks its input, and hands a fixed-size
/// entry to a lock-free queue. A writer thread encodes the lines and writes them in large
/// batches; at least once per `Options.syncInterval` (1 s by default) it hands them all to the
/// kernel and a sync thread makes them durable, so a crash loses at most that window (more only
/// when the disk itself takes longer to sync). A file slow to sync delays no other stream's
/// lines and no caller. `stop()` drains everything, syncs, writes `sync_point.json` and
/// `manifest.json`, and returns the line counts.
///
/// A stream's first call in a run creates its files (under a lock, once); that call is also
/// where a bad stream id is refused.
public final class SyncSession: @unchecked Sendable {
    /// Tuning for the writer. The defaults suit cameras and IMUs up to a few kHz.
    public struct Options: Sendable {
        /// Entries the queue holds before a caller has to wait for the writer. Rounded up to a
        /// power of two.
        public var queueCapacity: Int = 16_384
        /// The longest time between two `fdatasync`s of the session's files.
        public var syncIntervalNs: UInt64 = 1_000_000_000
        /// Bytes collected per file before a `write(2)`.
        public var batchBytes: Int = 256 * 1024
        /// How long the writer sleeps when it finds the queue empty. It also wakes for each
        /// sync and at `stop`.
        public var idlePollNs: UInt64 = 5_000_000

        public init() {}

        /// An `idlePollNs` for about `entriesPerSecond` `record` and `stamp` calls a second in
        /// all: the time a quarter of the queue takes to fill, from 10 ms to 500 ms.
        ///
        /// Each wake-up costs a small CPU more than the lines it writes (in the kernel rig, a
        /// writer woken every 100 ms used eight times the CPU of its work for a 30 fps camera);
        /// a caller that finds the queue full waits for the writer.
        public func idlePollNs(forEntriesPerSecond entriesPerSecond: Double) -> UInt64 {
            let seconds = Double(queueCapacity) / 4 / max(1, entriesPerSecond)
            return UInt64(min(0.5, max(0.01, seconds)) * 1e9)
        }

        /// The durability window in seconds (`syncIntervalNs` as seconds).
        public var syncInterval: Double {
            get { Double(syncIntervalNs) / 1e9 }
            set { syncIntervalNs = UInt64(max(0.001, newValue) * 1e9) }
        }
    }

    /// What the lock guards.
    private struct LockedState {
        var started = false
        var run = 0
        var syncPoint: SyncPoint?
        var links: [String: String] = [:]
        var writer: SessionWriter?
    }

    /// Raised by the writer when a file fails; checked by every call.
    final class FailureFlag: Sendable {
        let raised = Atomic<Bool>(false)
        private let failure = Mutex<SyncFieldError?>(nil)

        func raise(_ error: SyncFieldError) {
            failure.withLock { if $0 == nil { $0 = error } }
            raised.store(true, ordering: .releasing)
        }

        func reset() {
            failure.withLock { $0 = nil }
            raised.store(false, ordering: .releasing)
        }

        /// The first failure; `nil` unless `raised`.
        var error: SyncFieldError? { failure.withLock { $0 } }
    }

    public let hostId: String
    public let outputDir: URL
    public let options: Options
    /// Times every write and sync of the session's files, to tell a stalled or very slow disk:
    /// which files, how long (an operation of a second or more). It starts afresh with each run.
    /// Files written beside the session (videos) can be timed with it too.
    public let diskWatch = DiskWatch()

    private static let stoppedEpoch = -2
    /// The current run while started, `stoppedEpoch` otherwise.
    private let epoch = Atomic<Int>(SyncSession.stoppedEpoch)
    private let lock = Lock()
    private var locked = LockedState()
    private let queue: EntryQueue
    private let registry = StreamRegistry()
    private let directoryPath: String

    public init(hostId: String, outputDir: URL, options: Options = Options()) {
        self.hostId = hostId
        self.outputDir = outputDir
        self.options = options
        self.directoryPath = outputDir.path
        self.queue = EntryQueue(capacity: options.queueCapacity)
    }

    /// Convenience initializer accepting a file path string.
    public convenience init(hostId: String, outputDir: String, options: Options = Options()) {
        self.init(hostId: hostId, outputDir: URL(fileURLWithPath: outputDir), options: options)
    }

    deinit {
        // A session dropped while running still closes its files cleanly.
        if locked.started { _ = try? stop() }
    }

    /// The sync point of the current (or last) run.
    public var syncPoint: SyncPoint? {
        lock.lock()
        defer { lock.unlock() }
        return locked.syncPoint
    }

    /// How often a caller found the queue full and had to wait for the writer, over the
    /// session's life. Zero means the writer always kept up.
    public var queueFullWaits: Int { queue.fullWaits.load(ordering: .relaxed) }

    /// Whether more than half the writer's queue is free. A caller that would rather lose its
    /// own records than make the others wait (a stream another program feeds, which can send
    /// faster than any disk) records only while this holds, and leaves the other half to the
    /// streams whose records must not wait.
    package var writerHasRoom: Bool { queue.holdsFewer(than: queue.capacity / 2) }

    /// Wakes the writer if it sleeps, to drain the queue now: for a caller waiting for room.
    package func wakeWriter() {
        lock.lock()
        let writer = locked.writer
        lock.unlock()
        writer?.nudge.ring()
    }

    /// The writer queue's positions: claimed by callers so far, and drained by the writer. An
    /// entry enqueued before `claimed` was read is out of the queue once `drained` reaches it.
    package var writerQueuePositions: (claimed: Int, drained: Int) { (queue.claimedPosition, queue.drainedPosition) }

    /// The writer thread of the current run (for tests that watch what it does).
    var writerThread: pthread_t? {
        lock.lock()
        defer { lock.unlock() }
        return locked.writer?.pthread
    }

    /// The thread that syncs the current run's files (for tests that watch what it does).
    var syncThread: pthread_t? {
        lock.lock()
        defer { lock.unlock() }
        return locked.writer?.syncPthread
    }

    // MARK: - Lifecycle

    /// Begins a run: creates the output directory and captures the sync point.
    ///
    /// A session can be started again after `stop()`; each run rewrites the session's files,
    /// as the SDK does.
    ///
    /// - Throws: `SyncFieldError.sessionAlreadyStarted`, or `.ioFailure` when the directory
    ///   cannot be created.
    @discardableResult
    public func start() throws -> SyncPoint {
        lock.lock()
        defer { lock.unlock() }
        if locked.started { throw SyncFieldError.sessionAlreadyStarted }
        try Self.createDirectory(directoryPath)
        let syncPoint = SyncPoint.createNow(hostId: hostId)
        locked.run += 1
        locked.syncPoint = syncPoint
        locked.links = [:]
        queue.reopen(epoch: locked.run)
        writerFailureFlag.reset()
        diskWatch.reset()
        let writer = SessionWriter(
            queue: queue, registry: registry, hostId: hostId, directory: directoryPath, options: options,
            watch: diskWatch, failureFlag: writerFailureFlag)
        writer.start()
        locked.writer = writer
        locked.started = true
        epoch.store(locked.run, ordering: .releasing)
        return syncPoint
    }

    /// Ends the run: drains every accepted call, syncs and closes the files, and writes
    /// `sync_point.json` and `manifest.json`.
    ///
    /// - Returns: the number of timestamp lines of each stream (`{stream_id: frame_count}`).
    /// - Throws: `SyncFieldError.sessionNotStarted`, or the first `.ioFailure` of the run (the
    ///   sync point and manifest are still written, with the lines that reached the files).
    @discardableResult
    public func stop() throws -> [String: Int] {
        lock.lock()
        defer { lock.unlock() }
        guard locked.started, let writer = locked.writer else { throw SyncFieldError.sessionNotStarted }
        let run = locked.run
        locked.started = false
        locked.writer = nil
        epoch.store(Self.stoppedEpoch, ordering: .releasing)
        writer.finish(at: queue.close())

        var counts: [String: Int] = [:]
        var recorded: Set<String> = []
        for state in registry.table.all {
            if state.timestampsEpoch.load(ordering: .acquiring) == run {
                counts[state.id] = writer.lineCounts[state.index] ?? 0
                if writer.failure != nil {
                    counts[state.id] = Self.countLines(path: "\(directoryPath)/\(SyncFieldFiles.timestamps(state.id))")
                }
            }
            if state.sensorEpoch.load(ordering: .acquiring) == run { recorded.insert(state.id) }
        }
        let manifest = SessionManifest(hostId: hostId, timestampCounts: counts, recorded: recorded, links: locked.links)
        if let syncPoint = locked.syncPoint {
            try Self.writeAtomically(
                syncPoint.jsonValue.sdkPrettyBytes(), to: "\(directoryPath)/\(SyncFieldFiles.syncPoint)")
        }
        try Self.writeAtomically(manifest.jsonValue.sdkPrettyBytes(), to: "\(directoryPath)/\(SyncFieldFiles.manifest)")
        if let failure = writer.failure { throw failure }
        return counts
    }

    // MARK: - Recording

    /// Records a timestamp for one frame or packet of `streamId`.
    ///
    /// Call it immediately after the I/O read completes. The clock is read first, before
    /// anything else happens.
    ///
    /// - Parameters:
    ///   - streamId: the stream; it names the file `{streamId}.timestamps.jsonl`.
    ///   - frameNumber: the frame's index in the stream (0-based in the SDK's examples).
    ///   - uncertaintyNs: the timing uncertainty (default 5 ms, the SDK's value).
    ///   - captureNs: a `CLOCK_MONOTONIC_RAW` time taken earlier; `nil` reads the clock now.
    /// - Returns: the capture time written.
    @discardableResult
    public func stamp(
        _ streamId: String, frameNumber: Int, uncertaintyNs: UInt64 = syncFieldDefaultUncertaintyNs,
        captureNs: UInt64? = nil
    ) throws -> UInt64 {
        let ns = captureNs ?? MonotonicClock.now()
        let run = epoch.load(ordering: .acquiring)
        let stream = try openStream(streamId, sensor: false, run: run)
        let entry = QueueEntry(
            kind: .stamp, streamIndex: stream.index, frameNumber: frameNumber, captureNs: ns,
            uncertaintyNs: uncertaintyNs)
        try enqueue(run: run, entry, channels: nil)
        return ns
    }

    /// Records a timestamp and the sensor values that arrived with it: one line in
    /// `{streamId}.timestamps.jsonl` and one in `{streamId}.jsonl`, with the same `capture_ns`
    /// and `frame_number`.
    ///
    /// - Parameter channels: numbers (`Double`, `Float`, integers), arrays and
    ///   `[String: Any]` dictionaries of them, nested to any depth. NaN and infinity are
    ///   refused with `SyncFieldError.invalidChannelValue`, and then nothing is written.
    /// - Returns: the capture time written.
    @discardableResult
    public func record(
        _ streamId: String, frameNumber: Int, channels: [String: ChannelValue],
        uncertaintyNs: UInt64 = syncFieldDefaultUncertaintyNs, captureNs: UInt64? = nil
    ) throws -> UInt64 {
        let ns = captureNs ?? MonotonicClock.now()
        if let problem = ChannelValues.problem(in: channels) {
            throw SyncFieldError.invalidChannelValue(
                streamId: streamId, channel: problem.pathDescription, reason: problem.reason)
        }
        let run = epoch.load(ordering: .acquiring)
        let stream = try openStream(streamId, sensor: true, run: run)
        let entry = QueueEntry(
            kind: .record, streamIndex: stream.index, frameNumber: frameNumber, captureNs: ns,
            uncertaintyNs: uncertaintyNs)
        try enqueue(run: run, entry, channels: channels)
        return ns
    }

    /// Associates an external file (a video, say) with a stream, for `manifest.json`.
    public func link(_ streamId: String, path: String) {
        lock.lock()
        defer { lock.unlock() }
        locked.links[streamId] = path
    }

    /// A fixed-shape sensor stream: the same channels, all `Double`, in every record, as an IMU
    /// has. Its `record` writes the same bytes as `record(_:frameNumber:channels:)` with those
    /// names, but allocates nothing and sorts nothing per record.
    ///
    /// - Parameter channels: the channel names, in the order values will be passed (at most
    ///   16, no duplicates).
    /// - Throws: `.invalidStreamId`, or `.invalidChannelLayout` when the names are unusable or
    ///   the stream already has a different fixed layout.
    public func sensorStream(_ streamId: String, channels: [String]) throws -> SensorStream {
        if let problem = StreamID.problem(with: streamId) {
            throw SyncFieldError.invalidStreamId(streamId, reason: problem)
        }
        if channels.isEmpty || channels.count > QueueEntry.inlineValueCapacity {
            throw SyncFieldError.invalidChannelLayout(
                streamId: streamId,
                reason:
                    "a fixed-shape stream has 1 to \(QueueEntry.inlineValueCapacity) channels, not \(channels.count)")
        }
        if Set(channels).count != channels.count {
            throw SyncFieldError.invalidChannelLayout(streamId: streamId, reason: "channel names repeat")
        }
        lock.lock()
        defer { lock.unlock() }
        let state = registry.add(streamId)
        if let existing = state.fixedLayout {
            guard existing.names == channels else {
                throw SyncFieldError.invalidChannelLayout(
                    streamId: streamId,
                    reason: "already has channels \(existing.names), not \(channels)")
            }
        } else {
            state.fixedLayout = FixedChannelLayout(names: channels)
        }
        return SensorStream(session: self, state: state, layout: state.fixedLayout!)
    }

    // MARK: - The caller's path

    @inline(__always)
    private func openStream(_ id: String, sensor: Bool, run: Int) throws -> StreamState {
        if let state = registry.lookup(id), state.timestampsEpoch.load(ordering: .acquiring) == run,
            !sensor || state.sensorEpoch.load(ordering: .acquiring) == run
        {
            return state
        }
        return try openStreamSlowly(id, sensor: sensor, run: run)
    }

    /// The first call of a stream in a run: validate the id and create its files.
    private func openStreamSlowly(_ id: String, sensor: Bool, run: Int) throws -> StreamState {
        if let problem = StreamID.problem(with: id) { throw SyncFieldError.invalidStreamId(id, reason: problem) }
        lock.lock()
        defer { lock.unlock() }
        guard locked.started, locked.run == run else { throw SyncFieldError.sessionNotStarted }
        let state = registry.add(id)
        try openFiles(state, sensor: sensor, run: run)
        return state
    }

    /// Opens `state`'s files for `run`. Called with the lock held.
    func openFiles(_ state: StreamState, sensor: Bool, run: Int) throws {
        if state.timestampsEpoch.load(ordering: .relaxed) != run {
            state.timestampsFD = try Self.openOutput(path: "\(directoryPath)/\(SyncFieldFiles.timestamps(state.id))")
            state.timestampsEpoch.store(run, ordering: .releasing)
        }
        if sensor && state.sensorEpoch.load(ordering: .relaxed) != run {
            state.sensorFD = try Self.openOutput(path: "\(directoryPath)/\(SyncFieldFiles.sensor(state.id))")
            state.sensorEpoch.store(run, ordering: .releasing)
        }
    }

    @inline(__always)
    func enqueue(run: Int, _ entry: borrowing QueueEntry, channels: [String: Any]?) throws {
        if writerFailureFlag.raised.load(ordering: .acquiring), let failure = writerFailureFlag.error {
            throw failure
        }
        do {
            try queue.enqueue(epoch: run, entry, channels: channels)
        } catch {
            throw SyncFieldError.sessionNotStarted
        }
    }

    let writerFailureFlag = FailureFlag()

    /// Opens `state` for the current run if needed, for a fixed-shape record.
    @inline(__always)
    func openFixed(_ state: StreamState, run: Int) throws {
        if state.timestampsEpoch.load(ordering: .acquiring) == run
            && state.sensorEpoch.load(ordering: .acquiring) == run
        {
            return
        }
        lock.lock()
        defer { lock.unlock() }
        guard locked.started, locked.run == run else { throw SyncFieldError.sessionNotStarted }
        try openFiles(state, sensor: true, run: run)
    }

    @inline(__always)
    var currentRun: Int { epoch.load(ordering: .acquiring) }

    // MARK: - Files

    /// `mkdir -p`: each missing directory on the way made, the errno of the first that fails.
    private static func createDirectory(_ path: String) throws {
        var made = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            made += (made.isEmpty || made.hasSuffix("/") ? "" : "/") + component
            if mkdir(made, 0o777) != 0, errno != EEXIST {
                throw SyncFieldError.ioFailure(path: path, operation: "mkdir", errno: errno)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw SyncFieldError.ioFailure(path: path, operation: "mkdir", errno: errno)
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SyncFieldError.ioFailure(path: path, operation: "mkdir", errno: EEXIST)
        }
    }

    /// Writes `bytes` to `path` so that the file is either the old one or the whole new one.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(SyncFieldError) {
        do { try AtomicFile.write(bytes, to: path) } catch { throw SyncFieldError(error) }
    }

    /// Opens (creates or truncates) one of a stream's files.
    static func openOutput(path: String) throws(SyncFieldError) -> Int32 {
        do { return try OutputFile.open(path: path) } catch { throw SyncFieldError(error) }
    }

    /// Complete lines in a file (used when a write failed and the writer's count is not what
    /// reached the file).
    static func countLines(path: String) -> Int {
        guard let data = FileManager.default.contents(atPath: path) else { return 0 }
        return data.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
    }
}
