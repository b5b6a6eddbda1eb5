import CFieldcapLinux
import FieldcapCore
import FieldcapSystem
import Synchronization

/// One sample as live viewers get it: a sensor's values of its channels, in their order; a fed
/// stream's record, its channels as the program sent them (`fields`).
public struct LiveSample: Sendable, Equatable {
    public var captureNs: UInt64
    public var sequence: UInt64
    public var values: [Double]
    public var fields: JSONValue?

    public init(captureNs: UInt64, sequence: UInt64, values: [Double], fields: JSONValue? = nil) {
        self.captureNs = captureNs
        self.sequence = sequence
        self.values = values
        self.fields = fields
    }
}

/// At most `rate` samples a second of a stream, by their capture times: what a viewer that asked
/// for fewer than the stream has is sent (a Foxglove client's `--foxglove-max-rate`, the page's
/// `max_rate`). A sample within 50 µs of the spacing counts, so a 1 kHz IMU capped at 500 a
/// second sends every other one despite its jitter.
public struct LiveRateCap: Sendable {
    private let spacingNs: UInt64
    private var lastNs: UInt64 = 0

    /// `rate` nil: every sample.
    public init(rate: Double?) { spacingNs = rate.map { UInt64(1e9 / $0) } ?? 0 }

    /// Whether the sample at `captureNs` is sent; if so, it starts the next spacing.
    public mutating func admits(_ captureNs: UInt64) -> Bool {
        guard spacingNs > 0 else { return true }
        guard lastNs == 0 || captureNs &+ 50_000 &- lastNs >= spacingNs else { return false }
        lastNs = captureNs
        return true
    }
}

/// The live samples of a rig's sensor streams (IMUs) and fed streams (`--sensor feed:`, gpsd),
/// for viewers that watch them as they are captured: a Foxglove client, the web page's plots.
/// Each sensor has a `SampleTap` the recording (or the preview's capture, while idle) offers its
/// samples to, each fed stream a `FeedTap` (a recording's only: a feed's socket is open while
/// one runs); while anyone watches, a thread
/// takes them from the taps every 20 ms and hands each viewer its streams' samples in batches.
/// A viewer that does not keep up loses whole batches, the oldest first (it holds at most
/// `viewerBatches`): capture never waits for a viewer, and a slow one costs its own memory only.
///
/// Thread-safe.
public final class LiveSensors: Sendable {
    /// A sensor stream as viewers see it.
    public struct Stream: Sendable, Equatable {
        public var id: String
        /// A sensor's channels; empty for a fed stream, whose records carry their own.
        public var channels: [String]
        public var rate: Double
        public var isFeed: Bool
    }

    /// Batches a viewer may fall behind by before it loses the oldest (about 2.5 s).
    public static let viewerBatches = 128
    /// How often the taps are emptied while watched (ms): a 1 kHz IMU's 20 samples a batch.
    let periodMs: Int32

    /// The sensor streams, in the rig's order.
    public let streams: [Stream]
    public let taps: [String: SampleTap]
    public let feedTaps: [String: FeedTap]

    private struct Viewer {
        var streamId: String
        var continuation: AsyncStream<[LiveSample]>.Continuation
    }

    private let viewers = Mutex<[UInt64: Viewer]>([:])
    private let nextViewer = Atomic<UInt64>(0)
    private let viewerArrived = Doorbell()
    private let closing = Latch()
    private let thread = Mutex<DedicatedThread?>(nil)
    private let onViewers: Mutex<(@Sendable (Int) -> Void)?>

    /// - Parameter sensors: the rig's streams; those of kind `.sensor` are served.
    public init(sensors: [StreamDescriptor], periodMs: Int32 = 20) {
        self.periodMs = periodMs
        let served = sensors.filter { $0.kind == .sensor || $0.kind == .feed }
        streams = served.map {
            Stream(
                id: $0.id, channels: $0.kind == .feed ? [] : $0.channels, rate: $0.nominalRate,
                isFeed: $0.kind == .feed)
        }
        var taps: [String: SampleTap] = [:]
        var feedTaps: [String: FeedTap] = [:]
        for stream in served {
            if stream.kind == .feed {
                feedTaps[stream.id] = FeedTap(streamId: stream.id)
            } else {
                taps[stream.id] = SampleTap(streamId: stream.id, channels: stream.channels)
            }
        }
        self.taps = taps
        self.feedTaps = feedTaps
        onViewers = Mutex(nil)
        guard !served.isEmpty else { return }
        thread.withLock {
            $0 = DedicatedThread(name: "fc-live-sensors") { [self] in run() }
        }
    }

    /// The taps for a capture of `streams`: each sensor stream that came up with the channels
    /// its viewers were told of.
    public func taps(for streams: [StreamDescriptor]) -> [String: SampleTap] {
        taps.filter { id, tap in streams.contains { $0.id == id && $0.channels == tap.channels } }
    }

    /// Tells `handler` the number of viewers whenever the first arrives or the last leaves.
    public func onViewersChanged(_ handler: @escaping @Sendable (Int) -> Void) {
        onViewers.withLock { $0 = handler }
    }

    public var viewerCount: Int { viewers.withLock { $0.count } }

    /// Viewers of sensor streams (those the preview's idle capture opens devices for).
    public var sensorViewerCount: Int { viewers.withLock { $0.values.filter { taps[$0.streamId] != nil }.count } }

    /// Samples the viewers lost because this hub's thread was behind the taps, by stream id.
    public var tapDrops: [String: Int] {
        taps.mapValues(\.dropped).merging(feedTaps.mapValues(\.dropped)) { a, _ in a }
    }

    /// The fed streams' taps for a recording of `streams`.
    public func feedTaps(for streams: [StreamDescriptor]) -> [String: FeedTap] {
        feedTaps.filter { id, _ in streams.contains { $0.id == id && $0.kind == .feed } }
    }

    /// Every sample of stream `id` from now on, in batches; nil for a stream that is neither a
    /// sensor nor fed.
    public func samples(of id: String) -> AsyncStream<[LiveSample]>? {
        guard taps[id] != nil || feedTaps[id] != nil else { return nil }
        let (stream, continuation) = AsyncStream.makeStream(
            of: [LiveSample].self, bufferingPolicy: .bufferingNewest(Self.viewerBatches))
        if closing.isOpen {
            continuation.finish()
            return stream
        }
        let key = nextViewer.add(1, ordering: .relaxed).newValue
        let count = viewers.withLock { viewers in
            viewers[key] = Viewer(streamId: id, continuation: continuation)
            return viewers.count
        }
        // A close that began before the viewer was added may have finished the others already.
        if closing.isOpen {
            remove(key)
            continuation.finish()
            return stream
        }
        // The hub turns the tap on (it alone sets `watched`: a viewer's own set could be undone
        // by the hub's older view of who watches).
        continuation.onTermination = { [weak self] _ in self?.remove(key) }
        viewerArrived.ring()
        if count == 1 { onViewers.withLock { $0 }?(count) }
        return stream
    }

    private func remove(_ key: UInt64) {
        let left = viewers.withLock { viewers -> Int? in
            guard viewers.removeValue(forKey: key) != nil else { return nil }
            return viewers.count
        }
        if left == 0 { onViewers.withLock { $0 }?(0) }
    }

    /// Ends the thread; the viewers' streams finish.
    public func close() {
        closing.open()
        let finished = thread.withLock { thread -> DedicatedThread? in
            defer { thread = nil }
            return thread
        }
        finished?.join()
        let ended = viewers.withLock { viewers in
            defer { viewers = [:] }
            return Array(viewers.values)
        }
        for viewer in ended { viewer.continuation.finish() }
        for tap in taps.values { tap.watched = false }
        for tap in feedTaps.values { tap.watched = false }
    }

    /// The hub's thread: while anyone watches, takes every tap's samples each period and hands
    /// them to the stream's viewers; with nobody watching, the taps are left off and it sleeps.
    private func run() {
        // Below the capture and writer threads: on a small CPU the viewers are what wait.
        _ = CFieldcapLinux_nice_thread(10)
        let ordered = streams.compactMap { taps[$0.id] }
        let fed = streams.compactMap { feedTaps[$0.id] }
        while !closing.isOpen {
            let watching = viewers.withLock { Set($0.values.map(\.streamId)) }
            for tap in ordered { tap.watched = watching.contains(tap.streamId) }
            for tap in fed { tap.watched = watching.contains(tap.streamId) }
            // What a tap holds once its last viewer left is stale for the next: let go.
            for tap in ordered where !watching.contains(tap.streamId) { tap.drain { _ in } }
            for tap in fed where !watching.contains(tap.streamId) { _ = tap.drain() }
            if watching.isEmpty {
                _ = viewerArrived.wait(milliseconds: 1000, orUntil: closing)
                continue
            }
            for tap in fed where watching.contains(tap.streamId) {
                let batch = tap.drain().map {
                    LiveSample(captureNs: $0.captureNs, sequence: $0.sequence, values: [], fields: $0.channels)
                }
                if !batch.isEmpty { hand(batch, of: tap.streamId) }
            }
            for tap in ordered where watching.contains(tap.streamId) {
                var batch: [LiveSample] = []
                let width = tap.channels.count
                tap.drain { records in
                    batch.reserveCapacity(batch.count + records.count)
                    for record in records {
                        var values = [Double](repeating: 0, count: min(width, Int(record.valueCount)))
                        for index in values.indices { values[index] = record.values[index] }
                        batch.append(LiveSample(captureNs: record.captureNs, sequence: record.sequence, values: values))
                    }
                }
                if !batch.isEmpty { hand(batch, of: tap.streamId) }
            }
            _ = closing.wait(milliseconds: periodMs)
        }
    }

    private func hand(_ batch: [LiveSample], of streamId: String) {
        let targets = viewers.withLock { viewers in
            viewers.values.filter { $0.streamId == streamId }.map(\.continuation)
        }
        for target in targets { target.yield(batch) }
    }
}
