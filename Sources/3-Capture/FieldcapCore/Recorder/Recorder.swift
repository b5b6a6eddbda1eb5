import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The recording pipeline: one capture thread per source, each pushing `CaptureRecord`s into its
/// own SPSC ring; writer threads draining the rings in batches into a `RecordSink`: one for all
/// the sensor streams (`fc-writer`), and one per video stream and per fed stream (`fc-wr-ID`).
///
/// A video's writer waits for the disk at every frame (direct I/O) and at every sync; on a slow
/// card that is most of its time (0.3-0.7 s a frame at 2 MB/s in the kernel rig, 3 s through a
/// 3 s stall). With one writer for everything, a 1 kHz IMU's ring filled behind those waits and
/// lost 41% of its samples at 8 MB/s (issue 28). Now the thread that drains the sensors never
/// writes a frame nor syncs a video: when the disk cannot take everything, the video streams are
/// the ones that drop (their cameras run out of buffers), and each video's writer keeps one
/// write in flight for its file.
///
/// A capture thread never waits for a writer: a full ring counts a drop and capture goes on. A
/// writer never waits for an encoder either: a camera whose encoder is behind refuses the frame
/// (`RecordSink.write` returns false), which counts a drop for the reason `encoder` and takes no
/// frame number, so every stream's numbers stay its frames' indices in its file.
/// `stop` asks the sources to finish, joins their threads, lets the writers drain what the rings
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
        /// Records a writer takes from one ring before looking at the next.
        public var batchLimit = 512
        /// The longest a writer thread sleeps when its rings are empty. Each sleeps less when its
        /// own streams need it (`idlePollNs(for:)`).
        public var idlePollNs: UInt64 = 5_000_000
        /// The longest time between two `RecordSink.sync` calls: what a crash can lose.
        public var syncIntervalNs: UInt64 = 1_000_000_000
        /// Live previews, by stream id: each video stream's writer offers every frame it wrote
        /// to its tap (`FrameTap.offer`: one atomic load unless a preview is waiting).
        public var frameTaps: [String: FrameTap] = [:]
        /// Live sensor viewers, by stream id: the sensors' writer offers every sample it wrote to
        /// its tap (`SampleTap.offer`: one atomic load while nobody watches).
        public var sampleTaps: [String: SampleTap] = [:]
        /// Live viewers of fed streams, by stream id: each fed stream's writer offers every
        /// record it wrote (`FeedTap.offer`: one atomic load while nobody watches).
        public var feedTaps: [String: FeedTap] = [:]
        /// Told on the capture thread as it ends early (its source threw): the stream's id, why,
        /// and when (`CLOCK_MONOTONIC_RAW`, as the stream's summary gives it). The others go on.
        public var captureEnded: (@Sendable (_ stream: String, _ error: String, _ atNs: UInt64) -> Void)?
        /// Told on the capture thread as a stream's device goes away and as it comes back (or is
        /// refused): sources with a `presence`, rejoining their device after an unplug.
        public var presenceChanged: (@Sendable (_ stream: String, _ absence: Absence) -> Void)?

        public init() {}

        /// The sleep of a writer thread that writes these streams: as long as it can be without
        /// a camera running short of buffers, and at most 100 ms (as often as an IIO device is
        /// read).
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
            // A fed stream's ring holds 4,096 records: a writer that sleeps while a tenth of it
            // fills keeps up with the rate its program said (rate=), or 10 kHz when it said none.
            for stream in streams where stream.kind == .feed {
                seconds = min(seconds, 400 / (stream.nominalRate > 0 ? stream.nominalRate : 10_000))
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
        /// Records the sink refused because the stream's encoder was behind.
        public var encoderDropped = 0
        /// The records the encoder dropped, as runs of consecutive sequence numbers.
        public var encoderDroppedRuns: [ClosedRange<UInt64>] = []
        /// Sequence numbers of the first and last dropped record.
        public var droppedRange: ClosedRange<UInt64>?
        /// The dropped records as runs of consecutive sequence numbers.
        public var droppedRuns: [ClosedRange<UInt64>] = []
        /// Whether a table of runs (`droppedRuns` or `encoderDroppedRuns`) filled, its last run
        /// spanning all the rest: then only the counts are exact.
        public var droppedRunsTruncated = false
        /// Why the capture loop ended early, if it did.
        public var captureError: String?
        /// When the stream ended early: `CLOCK_MONOTONIC_RAW` at the moment its source failed.
        public var endedEarlyAtNs: UInt64?
        /// The `capture_ns` of the first and the last record written: the span the stream
        /// delivered over, which a late start (a camera's first frame can take a second) does
        /// not shorten the way it shortens the recording's.
        public var capturedSpanNs: ClosedRange<UInt64>?
        /// The times the stream's device was away (and came back), oldest first.
        public var absences: [Absence] = []

        public init(
            id: String, written: Int, dropped: Int, droppedRange: ClosedRange<UInt64>? = nil,
            droppedRuns: [ClosedRange<UInt64>] = [], captureError: String? = nil, endedEarlyAtNs: UInt64? = nil,
            capturedSpanNs: ClosedRange<UInt64>? = nil
        ) {
            self.id = id
            self.written = written
            self.dropped = dropped
            self.droppedRange = droppedRange
            self.droppedRuns = droppedRuns
            self.captureError = captureError
            self.endedEarlyAtNs = endedEarlyAtNs
            self.capturedSpanNs = capturedSpanNs
        }
    }

    /// One stream's counts as a status line shows them.
    public struct StreamProgress: Sendable, Equatable {
        public var id: String
        public var written: Int
        /// Records waiting in the ring.
        public var queued: Int
        /// Records the ring had no room for.
        public var dropped: Int
        /// Records the stream's encoder had no room for.
        public var encoderDropped: Int

        public init(id: String, written: Int, queued: Int, dropped: Int, encoderDropped: Int = 0) {
            self.id = id
            self.written = written
            self.queued = queued
            self.dropped = dropped
            self.encoderDropped = encoderDropped
        }
    }

    /// One writer thread and the streams it writes. Thread-bound (its writer) until joined.
    final class WriterLane {
        let threadName: String
        /// Stream indices.
        let streams: [Int]
        let idlePollNs: UInt64
        /// Records written per stream of `streams`, in the same order.
        var written: [Int]
        /// The `capture_ns` of each stream's first and last record written.
        var firstCaptureNs: [UInt64]
        var lastCaptureNs: [UInt64]
        /// Each stream's preview tap, if it has one.
        let taps: [FrameTap?]
        /// Each stream's live sensor tap, or fed stream's, if it has one.
        let sampleTaps: [SampleTap?]
        let feedTaps: [FeedTap?]
        var writeError: Error?
        var thread: DedicatedThread?

        init(
            threadName: String, streams: [Int], idlePollNs: UInt64, taps: [FrameTap?], sampleTaps: [SampleTap?],
            feedTaps: [FeedTap?] = []
        ) {
            self.threadName = threadName
            self.streams = streams
            self.idlePollNs = idlePollNs
            self.taps = taps
            self.sampleTaps = sampleTaps
            self.feedTaps = feedTaps.isEmpty ? Array(repeating: nil, count: streams.count) : feedTaps
            written = Array(repeating: 0, count: streams.count)
            firstCaptureNs = Array(repeating: 0, count: streams.count)
            lastCaptureNs = Array(repeating: 0, count: streams.count)
        }
    }

    public let sources: [CaptureSource]
    public let options: Options
    private let sink: RecordSink
    private let rings: [SPSCRing<CaptureRecord>]
    private let stopSignal = StopSignal()
    private let capturesRunning = Atomic<Int>(0)
    /// Records written per stream, published by its writer after each batch for status lines.
    private let writtenSoFar: [Counter]
    /// Per stream: records the sink refused (an encoder behind), counted by its writer.
    private let encoderDrops: [DropCounter]

    final class Counter: Sendable { let value = Atomic<Int>(0) }
    private var captureThreads: [DedicatedThread] = []
    /// The sensors' writer first (when there are sensors), then one per video stream.
    private let lanes: [WriterLane]
    /// Written by each capture thread before it finishes; read after joining.
    private var captureErrors: [String?]
    private var captureEndedNs: [UInt64?]
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
        writtenSoFar = sources.map { _ in Counter() }
        encoderDrops = sources.map { _ in DropCounter() }
        lanes = Self.lanes(
            for: sources.map(\.descriptor), maximumIdlePollNs: options.idlePollNs, taps: options.frameTaps,
            sampleTaps: options.sampleTaps, feedTaps: options.feedTaps)
    }

    /// Which writer thread writes which stream: the sensor streams together, each video stream
    /// and each fed stream on its own (a program's flood waits for the session's writer on its
    /// own thread, never in the IMUs' turn).
    static func lanes(
        for streams: [StreamDescriptor], maximumIdlePollNs: UInt64, taps: [String: FrameTap] = [:],
        sampleTaps: [String: SampleTap] = [:], feedTaps: [String: FeedTap] = [:]
    ) -> [WriterLane] {
        func lane(_ name: String, _ indices: [Int]) -> WriterLane {
            WriterLane(
                threadName: name, streams: indices,
                idlePollNs: min(maximumIdlePollNs, Options.idlePollNs(for: indices.map { streams[$0] })),
                taps: indices.map { streams[$0].kind == .video ? taps[streams[$0].id] : nil },
                sampleTaps: indices.map { streams[$0].kind == .sensor ? sampleTaps[streams[$0].id] : nil },
                feedTaps: indices.map { streams[$0].kind == .feed ? feedTaps[streams[$0].id] : nil })
        }
        let sensors = streams.indices.filter { streams[$0].kind == .sensor }
        let others = streams.indices.filter { streams[$0].kind != .sensor }
        return (sensors.isEmpty ? [] : [lane("fc-writer", sensors)])
            + others.map { lane("fc-wr-\(streams[$0].id)", [$0]) }
    }

    /// Opens the sink and starts the writers, then one capture thread per source.
    public func start() throws {
        try sink.open(streams: sources.map(\.descriptor))
        // Counted before the writers start: each ends once this reaches zero and its rings are empty.
        capturesRunning.store(sources.count, ordering: .releasing)
        for lane in lanes {
            lane.thread = DedicatedThread(name: lane.threadName) { [self] in drainUntilFinished(lane) }
        }
        for (index, source) in sources.enumerated() {
            let ring = rings[index]
            if let told = options.presenceChanged, let presence = source.presence {
                let id = source.descriptor.id
                presence.observe { told(id, $0) }
            }
            captureThreads.append(
                DedicatedThread(name: "fc-cap-\(source.descriptor.id)") { [self] in
                    do {
                        try source.run(into: ring, stop: stopSignal)
                    } catch {
                        // A stream that ends while its device is away (a return refused, given
                        // up on) ended when the device went, as one that stays away does.
                        let away = source.presence?.absences.last.flatMap { $0.returnedNs == nil ? $0.leftNs : nil }
                        let endedNs = away ?? MonotonicClock.now()
                        captureErrors[index] = "\(error)"
                        captureEndedNs[index] = endedNs
                        options.captureEnded?(source.descriptor.id, "\(error)", endedNs)
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
        var written = Array(repeating: 0, count: sources.count)
        var spans = [ClosedRange<UInt64>?](repeating: nil, count: sources.count)
        var writeError: Error?
        for lane in lanes {
            lane.thread?.join()
            lane.thread = nil
            for (slot, index) in lane.streams.enumerated() {
                written[index] = lane.written[slot]
                // Captured times rise within a stream; `max` keeps a range whatever a source did.
                let first = lane.firstCaptureNs[slot]
                if lane.written[slot] > 0 { spans[index] = first...max(first, lane.lastCaptureNs[slot]) }
            }
            writeError = writeError ?? lane.writeError
        }
        var counts: [String: Int] = [:]
        var closeError: Error?
        do { counts = try sink.close() } catch let closed as SinkClosedWithError {
            counts = closed.counts
            closeError = closed.error
        } catch { closeError = error }
        finalSummary = sources.enumerated().map { index, source in
            let drops = rings[index].drops
            var summary = StreamSummary(
                id: source.descriptor.id, written: counts[source.descriptor.id] ?? written[index], dropped: drops.count,
                droppedRange: drops.firstAndLast.map { $0.first...$0.last }, droppedRuns: drops.droppedRuns,
                captureError: captureErrors[index], endedEarlyAtNs: captureEndedNs[index], capturedSpanNs: spans[index])
            summary.encoderDropped = encoderDrops[index].count
            summary.encoderDroppedRuns = encoderDrops[index].droppedRuns
            summary.droppedRunsTruncated = drops.runsTruncated || encoderDrops[index].runsTruncated
            summary.absences = source.presence?.absences ?? []
            // A device still away at the stop ended the stream as one gone for good does. A fed
            // stream did not end: its socket took a program until the stop (the gap is recorded).
            if summary.captureError == nil, source.descriptor.kind != .feed, let last = summary.absences.last,
                last.returnedNs == nil
            {
                summary.captureError = "\(last.reason); it had not come back by the stop"
                summary.endedEarlyAtNs = last.leftNs
            }
            return summary
        }
        if let error = writeError ?? closeError { throw error }
        return finalSummary
    }

    /// Per stream: records written, waiting in the ring, and dropped so far (a snapshot for a
    /// status line; any thread).
    public var statistics: [StreamProgress] {
        sources.enumerated().map { index, source in
            StreamProgress(
                id: source.descriptor.id, written: writtenSoFar[index].value.load(ordering: .relaxed),
                queued: rings[index].count, dropped: rings[index].drops.count, encoderDropped: encoderDrops[index].count
            )
        }
    }

    /// One writer thread's loop: drain its streams' rings into the sink, sync them, until every
    /// capture has ended and the rings are empty, or a write failed.
    private func drainUntilFinished(_ lane: WriterLane) {
        var lastSync = MonotonicClock.now()
        while true {
            if MonotonicClock.now() &- lastSync >= options.syncIntervalNs && lane.writeError == nil {
                do { try sink.sync(streams: lane.streams) } catch { fail(lane, error) }
                lastSync = MonotonicClock.now()
            }
            // Read before draining: a capture thread that is done has pushed its last record.
            let capturesDone = capturesRunning.load(ordering: .acquiring) == 0
            var taken = 0
            // By index: no iterator, which allocates in debug builds.
            var slot = 0
            while slot < lane.streams.count && lane.writeError == nil {
                let index = lane.streams[slot]
                let source = sources[index]
                let tap = lane.taps[slot]
                let sampleTap = lane.sampleTaps[slot]
                let feedTap = lane.feedTaps[slot]
                let feedValues = feedTap == nil ? nil : source.descriptor.feedValues
                taken += rings[index].consume(limit: options.batchLimit) { run in
                    for record in run where lane.writeError == nil {
                        do {
                            let frame = source.frameBytes(of: record)
                            // A fed record's values are the sink's once written: a viewer's copy first.
                            let live = feedTap?.watched == true ? feedValues?.peek(record.bufferIndex) : nil
                            if try sink.write(record, frame: frame, stream: index, frameNumber: lane.written[slot]) {
                                tap?.offer(record, bytes: frame)
                                sampleTap?.offer(record)
                                if let live { feedTap?.offer(record, channels: live) }
                                if lane.written[slot] == 0 { lane.firstCaptureNs[slot] = record.captureNs }
                                lane.lastCaptureNs[slot] = record.captureNs
                                lane.written[slot] += 1
                            } else {
                                encoderDrops[index].record(record.sequence)
                            }
                        } catch {
                            fail(lane, error)
                        }
                        if record.bufferIndex >= 0 { source.releaseBuffer(record.bufferIndex) }
                    }
                }
                writtenSoFar[index].value.store(lane.written[slot], ordering: .relaxed)
                slot += 1
            }
            if taken == 0 {
                if capturesDone || lane.writeError != nil { return }
                // Once stopping, briefly: the capture threads are pushing their last records.
                stopSignal.idle(nanoseconds: lane.idlePollNs)
            }
        }
    }

    /// A write or sync failed (a full disk, an I/O error): this writer stops, and so does capture.
    private func fail(_ lane: WriterLane, _ error: Error) {
        lane.writeError = error
        failed.store(true, ordering: .releasing)
        stopSignal.request()
    }
}
