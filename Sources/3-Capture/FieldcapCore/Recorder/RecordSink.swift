import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// Where the writer threads put records.
///
/// The recorder writes each stream from one writer thread: all sensor streams from one, each
/// video stream from a thread of its own (`Recorder`). So `write` and `sync` for a given stream
/// always come from the same thread, while different streams are written at the same time from
/// different threads: a sink keeps each stream's outputs apart, and what streams share (a
/// `SyncSession`) must be thread-safe. `open` and `close` come from the controlling thread,
/// before the writers start and after they finished.
public protocol RecordSink: AnyObject {
    /// Prepares the outputs of `streams` (indices match the records' stream index).
    func open(streams: [StreamDescriptor]) throws
    /// Writes one record of stream `stream`; `frameNumber` is its index in that stream's output;
    /// `frame` holds a video record's bytes (read in place, valid during the call).
    ///
    /// - Returns: `false` when the sink had no room for the record (a camera's encoder is behind):
    ///   the record is dropped for the reason `encoder`, takes no number, and the next record
    ///   gets the number this one was offered.
    @discardableResult
    func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws -> Bool
    /// Makes what was written so far for `streams` durable, from the thread that writes them.
    /// Each writer calls it at least once per `Recorder.Options.syncIntervalNs`.
    func sync(streams: [Int]) throws
    /// Finishes every output. Returns the records written per stream id; when an output failed,
    /// throws `SinkClosedWithError`, which still carries them.
    func close() throws -> [String: Int]
}

/// A sink's outputs closed, one of them with an error (an encoder that failed): `counts` are
/// the records each stream really wrote, which can be fewer than the sink accepted.
public struct SinkClosedWithError: Error {
    public var error: Error
    public var counts: [String: Int]

    public init(_ error: Error, counts: [String: Int]) {
        self.error = error
        self.counts = counts
    }
}

extension RecordSink {
    /// Sinks whose outputs sync themselves (a `SyncSession` does, on its own thread) need nothing.
    public func sync(streams: [Int]) throws {}
}

/// Writes records into a SyncField session: sensor records through allocation-free
/// `SensorStream`s, fed records through `record()` with the channels their program sent (the
/// SDK's own encoding, so their lines are what an app calling it writes), frame records as
/// timestamp lines.
///
/// A fed record waits (on its stream's own writer thread) while the session's writer queue is
/// more than half full or holds more than `FeedAdmission.bytesInFlight` of the stream's lines,
/// and is refused (`write` returns false, a drop the recorder counts) once that lasted
/// `FeedAdmission.longestWaitNs`, until there is room again.
///
/// Thread-safe for `write` on different streams at once (after `open`): the session is, and the
/// per-stream tables are only read once opened.
public final class SyncSessionSink: RecordSink {
    public let session: SyncSession
    private var descriptors: [StreamDescriptor] = []
    private var sensors: [SensorStream?] = []
    /// Per fed stream: what of it the session's queue holds (writer-bound, the stream's lane).
    private var admissions: [FeedAdmission?] = []

    public init(session: SyncSession) { self.session = session }

    public func open(streams: [StreamDescriptor]) throws {
        admissions = streams.map { $0.feedValues == nil ? nil : FeedAdmission() }
        descriptors = streams
        sensors = try streams.map { descriptor in
            descriptor.kind == .sensor ? try session.sensorStream(descriptor.id, channels: descriptor.channels) : nil
        }
    }

    @discardableResult
    public func write(
        _ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int
    ) throws
        -> Bool
    {
        if let feed = descriptors[stream].feedValues {
            // A program can send faster than any disk takes: its records go only while the
            // session's writer has room to spare, so the others' never wait behind them.
            guard let admission = admissions[stream], admission.admit(bytes: Int(record.bytesUsed), session: session)
            else { return false }
            try session.record(
                descriptors[stream].id, frameNumber: frameNumber, channels: feed.take(record.bufferIndex),
                uncertaintyNs: record.uncertaintyNs, captureNs: record.captureNs)
            admission.entered(bytes: Int(record.bytesUsed), session: session)
        } else if let sensor = sensors[stream] {
            let count = Int(record.valueCount)
            let values = record.values
            try values.span.withUnsafeBufferPointer { all in
                _ = try sensor.record(
                    frameNumber: frameNumber, values: UnsafeBufferPointer(rebasing: all[0..<count]),
                    uncertaintyNs: record.uncertaintyNs, captureNs: record.captureNs)
            }
        } else {
            try session.stamp(
                descriptors[stream].id, frameNumber: frameNumber, uncertaintyNs: record.uncertaintyNs,
                captureNs: record.captureNs)
        }
        return true
    }

    public func close() throws -> [String: Int] {
        try session.stop()
    }
}

/// Keeps nothing: capture for a live preview while no recording runs (frames go to the
/// recorder's frame taps, then back to the camera).
public final class DiscardingSink: RecordSink {
    public init() {}

    public func open(streams: [StreamDescriptor]) throws {}

    public func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) -> Bool {
        true
    }

    public func close() throws -> [String: Int] { [:] }
}

/// How much of a fed stream the session's writer queue may hold (a record that finds no room wakes
/// the session's writer, which may be asleep for its idle poll): records go in while the queue is
/// less than half full (the other half is the cameras' and IMUs') and the stream's lines in it
/// are under `bytesInFlight` (a bound on the memory its parsed records hold, and on how long
/// other streams' lines wait behind them to be encoded). A record that finds no room waits, the
/// stream's own writer thread (its ring keeps taking what the program sends), up to
/// `longestWaitNs`; after a wait that long, records are refused at once until room is back, so
/// a stalled disk costs a stop no more than one wait.
///
/// Thread-bound (the fed stream's writer).
final class FeedAdmission {
    static let bytesInFlight = 4 << 20
    static let longestWaitNs: UInt64 = 200_000_000
    /// The stream's records in the queue: the queue position claimed after each, and its bytes.
    private var entries: [(position: Int, bytes: Int)] = []
    private var first = 0
    private var bytes = 0
    private var refusing = false

    func admit(bytes size: Int, session: SyncSession) -> Bool {
        var waitedNs: UInt64 = 0
        while !hasRoom(for: size, session: session) {
            if refusing || waitedNs >= Self.longestWaitNs {
                refusing = true
                return false
            }
            // The session's writer may be asleep for its idle poll: what is queued can go now.
            if waitedNs == 0 { session.wakeWriter() }
            var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&pause, nil)
            waitedNs += 1_000_000
        }
        refusing = false
        return true
    }

    /// The record just enqueued: counted until the writer drained past it.
    func entered(bytes size: Int, session: SyncSession) {
        entries.append((session.writerQueuePositions.claimed, size))
        bytes += size
    }

    private func hasRoom(for size: Int, session: SyncSession) -> Bool {
        let drained = session.writerQueuePositions.drained
        while first < entries.count, entries[first].position <= drained {
            bytes -= entries[first].bytes
            first += 1
        }
        if first > 1024 && first * 2 > entries.count {
            entries.removeFirst(first)
            first = 0
        }
        return session.writerHasRoom && bytes + size <= Self.bytesInFlight
    }
}
