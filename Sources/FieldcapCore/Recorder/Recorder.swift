import SyncField
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The recording pipeline: one capture thread per source, each pushing `CaptureRecord`s into its
/// own SPSC ring; one writer thread draining every ring in batches into a `RecordSink`.
///
/// A capture thread never waits for the writer: a full ring counts a drop and capture goes on.
/// `stop` asks the sources to finish, joins their threads, lets the writer drain what the rings
/// hold, and closes the sink.
///
/// Thread-safe: `start` and `stop` from one controlling thread; `statistics` from any.
public final class Recorder: @unchecked Sendable {
    public struct Options: Sendable {
        /// Records each sensor's ring holds (rounded up to a power of two).
        public var ringCapacity = 4096
        /// Records each camera's ring holds. A camera never has more frames out than its
        /// buffers (they come back only once written), so a small ring loses nothing and keeps
        /// the memory (160 bytes a record) small on a rig.
        public var videoRingCapacity = 256
        /// Records the writer takes from one ring before looking at the next.
        public var batchLimit = 512
        /// How long the writer sleeps when every ring is empty (`idlePollNs(for:)` fits it to
        /// the streams).
        public var idlePollNs: UInt64 = 5_000_000
        /// The longest time between two `RecordSink.sync` calls: what a crash can lose.
        public var syncIntervalNs: UInt64 = 1_000_000_000

        public init() {}

        /// The writer's sleep for these streams: as long as it can be without a camera running
        /// short of buffers, and at most 100 ms (as often as an IIO device is read).
        ///
        /// On a small CPU each wake-up costs (in the kernel rig a writer woken every 20 ms was a
        /// quarter of an IMU recording's CPU), and a writer woken for every frame doubles a
        /// camera's wake-ups. A camera gets each buffer back only once its frame is written:
        /// sleeping while a third of its buffers fill keeps two thirds queued in the driver (5 of
        /// a 30 fps camera's 8 buffers, with a sleep of 89 ms). Sensor rings hold seconds.
        public static func idlePollNs(for streams: [StreamDescriptor]) -> UInt64 {
            var seconds = 0.1
            for stream in streams where stream.kind == .video {
                let rate = stream.nominalRate > 0 ? stream.nominalRate : 30
                seconds = min(seconds, Double(stream.frameBuffers ?? 4) / 3 / rate)
            }
            return UInt64(max(0.002, seconds) * 1e9)
        }
    }

    /// What happened to one stream.
    public struct StreamSummary: Sendable, Equatable {
        public var id: String
        public var written: Int
        /// Records the ring had no room for.
        public var dropped: Int
        /// Sequence numbers of the first and last dropped record.
        public var droppedRange: ClosedRange<UInt64>?
        /// The dropped records as runs of consecutive sequence numbers.
        public var droppedRuns: [ClosedRange<UInt64>] = []
        /// Why the capture loop ended early, if it did.
        public var captureError: String?
        /// When the stream ended early: `CLOCK_MONOTONIC_RAW` at the moment its source failed.
        public var endedEarlyAtNs: UInt64?
    }

    public let sources: [CaptureSource]
    public let options: Options
    private let sink: RecordSink
    private let rings: [SPSCRing<CaptureRecord>]
    private let stopSignal = StopSignal()
    private let capturesRunning = Atomic<Int>(0)
    /// Records written per stream, published by the writer after each batch for status lines.
    private let writtenSoFar: [Counter]

    final class Counter: Sendable { let value = Atomic<Int>(0) }
    private var captureThreads: [DedicatedThread] = []
    private var writerThread: DedicatedThread?
    /// Written by each capture thread before it finishes; read after joining.
    private var captureErrors: [String?]
    private var captureEndedNs: [UInt64?]
    /// Writer-bound until joined.
    private var written: [Int]
    private var writeError: Error?
    private let failed = Atomic<Bool>(false)

    /// Whether writing failed (a full disk, an I/O error): capture is stopping, and the caller
    /// should call `stop()`. Any thread.
    public var hasFailed: Bool { failed.load(ordering: .acquiring) }

    /// What `stop()` found, also when it threw.
    public private(set) var finalSummary: [StreamSummary] = []

    public init(sources: [CaptureSource], sink: RecordSink, options: Options = Options()) {
        self.sources = sources
        self.sink = sink
        self.options = options
        rings = sources.map {
            SPSCRing(minimumCapacity: $0.descriptor.kind == .video ? options.videoRingCapacity : options.ringCapacity)
        }
        captureErrors = Array(repeating: nil, count: sources.count)
        captureEndedNs = Array(repeating: nil, count: sources.count)
        written = Array(repeating: 0, count: sources.count)
        writtenSoFar = sources.map { _ in Counter() }
    }

    /// Opens the sink and starts the writer, then one capture thread per source.
    public func start() throws {
        try sink.open(streams: sources.map(\.descriptor))
        // Counted before the writer starts: it ends once this reaches zero and the rings are empty.
        capturesRunning.store(sources.count, ordering: .releasing)
        writerThread = DedicatedThread(name: "fc-writer") { [self] in drainUntilFinished() }
        for (index, source) in sources.enumerated() {
            let ring = rings[index]
            captureThreads.append(DedicatedThread(name: "fc-cap-\(source.descriptor.id)") { [self] in
                do {
                    try source.run(into: ring, stop: stopSignal)
                } catch {
                    captureErrors[index] = "\(error)"
                    captureEndedNs[index] = MonotonicClock.now()
                }
                capturesRunning.subtract(1, ordering: .releasing)
            })
        }
    }

    /// Stops every source, writes what they captured, and closes the sink.
    ///
    /// - Throws: the first error the sink reported (everything before it was written).
    @discardableResult
    public func stop() throws -> [StreamSummary] {
        stopSignal.request()
        for thread in captureThreads { thread.join() }
        writerThread?.join()
        writerThread = nil
        var counts: [String: Int] = [:]
        var closeError: Error?
        do { counts = try sink.close() } catch { closeError = error }
        finalSummary = sources.enumerated().map { index, source in
            let drops = rings[index].drops
            return StreamSummary(
                id: source.descriptor.id, written: counts[source.descriptor.id] ?? written[index], dropped: drops.count,
                droppedRange: drops.firstAndLast.map { $0.first...$0.last }, droppedRuns: drops.droppedRuns,
                captureError: captureErrors[index], endedEarlyAtNs: captureEndedNs[index])
        }
        if let error = writeError ?? closeError { throw error }
        return finalSummary
    }

    /// Per stream: records written, waiting in the ring, and dropped so far (a snapshot for a
    /// status line; any thread).
    public var statistics: [(id: String, written: Int, queued: Int, dropped: Int)] {
        sources.enumerated().map { index, source in
            (source.descriptor.id, writtenSoFar[index].value.load(ordering: .relaxed), rings[index].count,
             rings[index].drops.count)
        }
    }

    private func drainUntilFinished() {
        var lastSync = MonotonicClock.now()
        while true {
            if MonotonicClock.now() &- lastSync >= options.syncIntervalNs && writeError == nil {
                do { try sink.sync() } catch {
                    writeError = error
                    failed.store(true, ordering: .releasing)
                    stopSignal.request()
                }
                lastSync = MonotonicClock.now()
            }
            // Read before draining: a capture thread that is done has pushed its last record.
            let capturesDone = capturesRunning.load(ordering: .acquiring) == 0
            var taken = 0
            for index in rings.indices where writeError == nil {
                taken += rings[index].consume(limit: options.batchLimit) { run in
                    for record in run where writeError == nil {
                        do {
                            try sink.write(
                                record, frame: sources[index].frameBytes(of: record), stream: index,
                                frameNumber: written[index])
                            written[index] += 1
                        } catch {
                            writeError = error
                            failed.store(true, ordering: .releasing)
                            stopSignal.request()
                        }
                        if record.bufferIndex >= 0 { sources[index].releaseBuffer(record.bufferIndex) }
                    }
                }
                writtenSoFar[index].value.store(written[index], ordering: .relaxed)
            }
            if taken == 0 {
                if capturesDone || writeError != nil { return }
                // Once stopping, briefly: the capture threads are pushing their last records.
                stopSignal.idle(nanoseconds: options.idlePollNs)
            }
        }
    }
}
