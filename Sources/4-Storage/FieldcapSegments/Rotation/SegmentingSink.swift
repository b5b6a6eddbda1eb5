import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a segmented recording's segments come from and go: a store makes each segment's
/// directory, session and files, and finishes each one once every stream has left it. The
/// session layer implements it (`SegmentedSessions`); this module only decides which record goes
/// where and when a segment is done.
public protocol SegmentStore: AnyObject {
    /// Makes segment `number` ready to be written: its directory, session and files, opened for
    /// `streams` (the returned sink's `open` has been called). From the rotation thread, and for
    /// the first segment from `SegmentingSink.open`.
    func openSegment(number: Int, startNs: UInt64, endNs: UInt64, streams: [StreamDescriptor]) throws -> RecordSink
    /// Finishes a segment every stream has left: closes `sink` (videos, manifest), then writes
    /// what the store keeps about it. `final` when the recording is stopping (the store writes
    /// what only the end knows later). From the rotation thread, or the controlling thread at
    /// the end. Returns the records written per stream id.
    func closeSegment(_ segment: FinishedSegment, sink: RecordSink, final: Bool) throws -> [String: Int]
    /// Removes a segment that was made ready but that no stream ever wrote into.
    func discardSegment(number: Int, sink: RecordSink)
}

/// What one stream put into one segment.
public struct SegmentStreamTally: Sendable, Equatable {
    public var records = 0
    public var firstCaptureNs: UInt64?
    public var lastCaptureNs: UInt64?
    public var firstSequence: UInt64?
    public var lastSequence: UInt64?
    /// Records missing by the device's own count, ring drops and device gaps alike: between two
    /// records of this segment, and between the previous segment's last record and this one's
    /// first (a gap at a boundary counts where the record after it went).
    public var missing = 0
    /// The missing sequence numbers as runs (at most `SegmentStreamTally.runCapacity`; the last
    /// one absorbs any beyond).
    public var missingRuns: [ClosedRange<UInt64>] = []
    /// Frames the segment's sink refused because the camera's encoder was behind (`encode=`):
    /// not among `missing`, which the device and the ring lost.
    public var encoderDropped = 0
    /// The refused frames' sequence numbers as runs (as `missingRuns`).
    public var encoderDroppedRuns: [ClosedRange<UInt64>] = []
    /// Whether `missingRuns` or `encoderDroppedRuns` filled, its last run spanning all the rest.
    public var runsTruncated = false

    /// Room for a jittery IMU's gaps in a long segment (16 KiB at most, per stream).
    public static let runCapacity = 1024

    public init() {}

    mutating func add(_ record: CaptureRecord, previousSequence: UInt64?) {
        countGap(before: record.sequence, previousSequence: previousSequence)
        if records == 0 {
            firstCaptureNs = record.captureNs
            firstSequence = record.sequence
        }
        lastCaptureNs = record.captureNs
        lastSequence = record.sequence
        records += 1
    }

    /// A record the segment's sink refused: it goes to `encoderDropped`, the gap before it to
    /// `missing`.
    mutating func refuse(_ record: CaptureRecord, previousSequence: UInt64?) {
        countGap(before: record.sequence, previousSequence: previousSequence)
        encoderDropped += 1
        if Self.append(record.sequence...record.sequence, to: &encoderDroppedRuns) { runsTruncated = true }
    }

    private mutating func countGap(before sequence: UInt64, previousSequence: UInt64?) {
        guard let previous = previousSequence, sequence > previous &+ 1 else { return }
        let gap = (previous &+ 1)...(sequence &- 1)
        missing += Int(clamping: gap.upperBound - gap.lowerBound + 1)
        if Self.append(gap, to: &missingRuns) { runsTruncated = true }
    }

    /// Adds `run` to `runs`, joined to the last run it follows on, the last run absorbing any
    /// beyond `runCapacity`; true when it absorbed a run it does not touch (the list is no
    /// longer exact).
    private static func append(_ run: ClosedRange<UInt64>, to runs: inout [ClosedRange<UInt64>]) -> Bool {
        guard let last = runs.last else {
            runs.append(run)
            return false
        }
        if last.upperBound &+ 1 == run.lowerBound {
            runs[runs.count - 1] = last.lowerBound...run.upperBound
            return false
        }
        if runs.count >= runCapacity {
            runs[runs.count - 1] = last.lowerBound...run.upperBound
            return true
        }
        runs.append(run)
        return false
    }
}

/// A segment every stream has left, as `SegmentStore.closeSegment` gets it.
public struct FinishedSegment: Sendable {
    public var number: Int
    /// Where the schedule put its start and end (`CLOCK_MONOTONIC_RAW`).
    public var startNs: UInt64
    public var endNs: UInt64
    /// Per stream, in the recording's stream order.
    public var tallies: [SegmentStreamTally]
}

/// A `RecordSink` that records into consecutive segments without stopping capture: each record
/// goes into the segment its `capture_ns` falls in (`SegmentSchedule`), each segment is a sink
/// of its own (from a `SegmentStore`), and the files rotate while the devices stream on.
///
/// Threads:
/// - Each stream's writer thread (the recorder's) writes its records into the stream's current
///   segment and moves the stream on at the first record at or past the segment's end. The next
///   segment is always ready by then (made one segment ahead), so a move is a pointer swap under
///   a lock taken once per stream per segment; the writer never opens, closes or syncs a
///   segment's files but its own stream's current ones. If the next segment is not ready yet
///   (a segment shorter than its set-up, a stalled disk), the stream stays where it is and the
///   cut comes later: nothing waits, nothing is lost.
/// - A rotation thread (`fc-segments`) makes the next segment ready as soon as every stream is
///   in the newest one, and finishes each segment once every stream has left it: trailers,
///   manifest, sidecar, index, fsync, deletions, all off the capture and writer threads.
/// - A stream that delivers nothing (a stalled or lost device) leaves a segment without a record
///   once `lateNs` have passed after its end, at the writer's next sync.
///
/// Thread-safe as `RecordSink` requires: `write`/`sync` per stream from its writer thread,
/// `open`/`close` from the controlling thread.
public final class SegmentingSink: RecordSink, @unchecked Sendable {
    /// One segment while it is open. `tallies[s]` is written only by stream `s`'s writer, and
    /// published to the rotation thread by `streamsInside` (released when the stream leaves).
    final class OpenSegment: @unchecked Sendable {
        let number: Int
        let startNs: UInt64
        let endNs: UInt64
        let sink: RecordSink
        let streamsEntered = Atomic<Int>(0)
        let streamsInside = Atomic<Int>(0)
        let tallies: [TallyBox]

        init(number: Int, startNs: UInt64, endNs: UInt64, sink: RecordSink, streams: Int) {
            self.number = number
            self.startNs = startNs
            self.endNs = endNs
            self.sink = sink
            tallies = (0..<streams).map { _ in TallyBox() }
        }
    }

    final class TallyBox: @unchecked Sendable { var value = SegmentStreamTally() }

    /// A stream's place in the segments. Thread-bound to the stream's writer (the controlling
    /// thread's only after the writers were joined).
    final class StreamPlace {
        var segment: OpenSegment
        var frameNumber = 0
        var tally = SegmentStreamTally()
        var lastSequence: UInt64?

        init(segment: OpenSegment) { self.segment = segment }
    }

    public let schedule: SegmentSchedule
    /// How long after a segment's end a stream with nothing to write still counts as in it.
    public let lateNs: UInt64
    private let store: SegmentStore
    private var descriptors: [StreamDescriptor] = []
    private var places: [StreamPlace] = []
    /// Open segments, oldest first: the rotation thread appends and removes, writers look up.
    private let open = Mutex<[OpenSegment]>([])
    private let stopRotation = StopSignal()
    private var rotation: DedicatedThread?
    private let failure = Mutex<String?>(nil)
    /// Records written per stream id in the segments finished so far.
    private let counts = Mutex<[String: Int]>([:])

    public init(schedule: SegmentSchedule, store: SegmentStore, lateNs: UInt64 = 1_000_000_000) {
        self.schedule = schedule
        self.store = store
        self.lateNs = lateNs
    }

    /// Why rotating failed (a segment could not be made or finished), if it did: the recording
    /// goes on in the segment it is in; the front end should stop it. Any thread.
    public var rotationFailure: String? { failure.withLock { $0 } }

    /// Opens the first segment and starts the rotation thread.
    public func open(streams: [StreamDescriptor]) throws {
        descriptors = streams
        let first = try makeSegment(number: 1)
        first.streamsEntered.store(streams.count, ordering: .relaxed)
        first.streamsInside.store(streams.count, ordering: .relaxed)
        open.withLock { $0 = [first] }
        places = streams.map { _ in StreamPlace(segment: first) }
        rotation = DedicatedThread(name: "fc-segments") { [self] in rotate() }
    }

    /// A record the segment's sink refuses (its encoder is behind) takes no number in the
    /// segment, and shows in its tally as dropped by the encoder.
    public func write(
        _ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber _: Int
    ) throws
        -> Bool
    {
        let place = places[stream]
        while record.captureNs >= place.segment.endNs, moveOn(place, stream: stream) {}
        guard try place.segment.sink.write(record, frame: frame, stream: stream, frameNumber: place.frameNumber) else {
            place.tally.refuse(record, previousSequence: place.lastSequence)
            place.lastSequence = record.sequence
            return false
        }
        place.tally.add(record, previousSequence: place.lastSequence)
        place.lastSequence = record.sequence
        place.frameNumber += 1
        return true
    }

    public func sync(streams: [Int]) throws {
        let now = MonotonicClock.now()
        for stream in streams {
            let place = places[stream]
            // A stream with nothing to write leaves a segment a while after its end.
            while now >= place.segment.endNs &+ lateNs, moveOn(place, stream: stream) {}
            try place.segment.sink.sync(streams: [stream])
        }
    }

    /// Moves `stream` into the segment after its current one, if that one is ready.
    private func moveOn(_ place: StreamPlace, stream: Int) -> Bool {
        let current = place.segment
        guard let next = open.withLock({ $0.first { $0.number == current.number + 1 } }) else { return false }
        current.tallies[stream].value = place.tally
        place.tally = SegmentStreamTally()
        place.frameNumber = 0
        place.segment = next
        next.streamsInside.add(1, ordering: .relaxed)
        next.streamsEntered.add(1, ordering: .releasing)
        current.streamsInside.subtract(1, ordering: .releasing)
        return true
    }

    /// Finishes every segment a stream is in, and removes the one made ready that none entered.
    /// Returns the records written per stream id over all segments.
    public func close() throws -> [String: Int] {
        stopRotation.request()
        rotation?.join()
        rotation = nil
        // The writers are done: their places are the controlling thread's now.
        for (stream, place) in places.enumerated() { place.segment.tallies[stream].value = place.tally }
        let remaining = open.withLock { segments in
            defer { segments = [] }
            return segments
        }
        var firstError: Error?
        for segment in remaining {
            if segment.streamsEntered.load(ordering: .acquiring) == 0 {
                store.discardSegment(number: segment.number, sink: segment.sink)
                continue
            }
            do { try finish(segment, final: !isLeft(segment)) } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
        return counts.withLock { $0 }
    }

    private func makeSegment(number: Int) throws -> OpenSegment {
        let startNs = schedule.startNs(ofSegment: number)
        let endNs = schedule.endNs(ofSegment: number)
        let sink = try store.openSegment(number: number, startNs: startNs, endNs: endNs, streams: descriptors)
        return OpenSegment(number: number, startNs: startNs, endNs: endNs, sink: sink, streams: descriptors.count)
    }

    private func finish(_ segment: OpenSegment, final: Bool) throws {
        let finished = FinishedSegment(
            number: segment.number, startNs: segment.startNs, endNs: segment.endNs,
            tallies: segment.tallies.map(\.value))
        let written = try store.closeSegment(finished, sink: segment.sink, final: final)
        counts.withLock { totals in
            for (id, count) in written { totals[id, default: 0] += count }
        }
    }

    /// Whether every stream has been in `segment` and left it. Each stream enters every segment
    /// in turn (and counts itself inside before it counts itself entered).
    private func isLeft(_ segment: OpenSegment) -> Bool {
        segment.streamsEntered.load(ordering: .acquiring) == descriptors.count
            && segment.streamsInside.load(ordering: .acquiring) == 0
    }

    /// The rotation thread: make the next segment ready once every stream is in the newest,
    /// finish each segment every stream has left.
    ///
    /// It polls: a quarter of a segment at most, 100 ms at most (a wake-up costs on a small CPU;
    /// finishing a segment 100 ms after its last stream left it costs nothing).
    private func rotate() {
        let streams = descriptors.count
        let pollMs = Int32(max(1, min(100, schedule.lengthNs / 4_000_000)))
        while !stopRotation.isRequested {
            let (newest, left) = open.withLock { segments in (segments.last, segments.filter(isLeft)) }
            if left.isEmpty, let newest, newest.streamsEntered.load(ordering: .acquiring) == streams,
                rotationFailure == nil
            {
                do {
                    let next = try makeSegment(number: newest.number + 1)
                    open.withLock { $0.append(next) }
                } catch {
                    fail("cannot start segment \(newest.number + 1): \(error)")
                }
            }
            for segment in left {
                // Every stream moved past it (releasing its tally): nobody writes it any more.
                open.withLock { $0.removeAll { $0 === segment } }
                do { try finish(segment, final: false) } catch {
                    fail("cannot finish segment \(segment.number): \(error)")
                }
            }
            if left.isEmpty { _ = stopRotation.wait(milliseconds: pollMs) }
        }
    }

    private func fail(_ message: String) {
        failure.withLock { $0 = $0 ?? message }
    }
}
