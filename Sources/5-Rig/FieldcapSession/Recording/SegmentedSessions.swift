import FieldcapClockQuality
import FieldcapCore
import FieldcapSegments
import FieldcapSystem
import FoundationEssentials
import Glibc
import Logging
import SyncField
import Synchronization

/// The segments of a segmented recording on disk: each one a SyncField session in a directory of
/// its own (`00000001-20261123T140200Z`, names that sort by time) inside the recording's
/// directory, beside the recording's index (`recording.json`), kept within a storage budget.
///
/// `SegmentingSink` calls it from its rotation thread (open, close, discard) and, at the start
/// and the end, from the controlling thread; never from two at once (the rotation thread is
/// joined before the end). The index is this type's alone; marks (`MarkKeeper`) come from any
/// thread, so every change to it and every write of it holds `indexLock`.
public final class SegmentedSessions: SegmentStore, @unchecked Sendable {
    public struct Settings: Sendable {
        public var lengthNs: UInt64
        public var budget: StorageBudget
        /// How the user wrote the limits, for the index's deletion reasons.
        public var maxStorageLabel: String
        public var keepLabel: String
        /// The cameras' calibration, copied into every segment and named in its sidecar.
        public var calibration: SessionCalibration?
        /// How each camera's frames are stored, by stream id (`encode=`).
        public var encodings: [String: VideoEncoding] = [:]
        /// Encoding threads of the cameras that have more than one, by stream id.
        public var encoderThreads: [String: Int] = [:]
        /// The live previews of JPEG-encoded cameras, fed by each segment's encoders
        /// (`VideoSessionSink`).
        public var previewTaps: [String: FrameTap] = [:]
        /// Where the wall clock's discipline is read at each segment's sync point.
        public var wallClock = ClockQualityReader()
        /// The capture across rigs, in every segment's sidecar.
        public var captureId: String?
        /// Told once a segment is finished (its sidecar and the index written) while the next one
        /// is being written, with the next one's directory name: on the rotation thread, or on
        /// the stopping thread for a segment the stop finishes.
        public var rotated: (@Sendable (_ next: String) -> Void)?
        /// Told when the budget gives up a mark (its window no longer fits), with the limit: on
        /// the rotation thread.
        public var markGivenUp: (@Sendable (Mark, _ reason: String) -> Void)?
        /// The windows of marks that name none.
        public var markWindows = MarkWindows()

        public init(lengthNs: UInt64, budget: StorageBudget, maxStorageLabel: String = "", keepLabel: String = "") {
            self.lengthNs = lengthNs
            self.budget = budget
            self.maxStorageLabel = maxStorageLabel
            self.keepLabel = keepLabel
        }
    }

    /// A segment being written: what finishing it needs.
    struct Open {
        var session: SyncSession
        var sink: VideoSessionSink
        var syncPoint: SyncPoint
        var wallClock: ClockQuality
        var layout: SessionLayout
        var startedWall: Date
    }

    /// A segment the recording's stop finished: its sidecar waits for the stop's reason.
    struct Stopped {
        var open: Open
        var segment: FinishedSegment
    }

    public let directory: String
    public let settings: Settings
    private let hostId: String
    let sources: [CaptureSource]
    private let sessionOptions: SyncSession.Options
    private let directIO: Bool
    /// Each source's report as capture started (`Sidecar.reports`).
    private var startReports: [SourceReport] = []
    private var open: [Int: Open] = [:]
    private var stopped: [Stopped] = []
    var index: RecordingIndex
    /// Held while the index changes or is written: by the rotation thread, and by marks.
    let indexLock = Lock()
    /// Bytes of the finished segments still on disk, and the directories of the segments being
    /// written: for `bytesNow`, from any thread.
    private let finishedBytes = Atomic<UInt64>(0)
    private let openDirectories = Mutex<[String]>([])
    /// Each segment's session times its own files: the watches of the segments being written,
    /// those finished since a status line last looked, and the stalls of every finished one.
    private let watches = Mutex<Watches>(Watches())
    private let firstSyncPointTaken = Mutex<SyncPoint?>(nil)
    /// The newest segment's sync point: a mark's UTC is taken through it, as an extract of the
    /// mark's window maps it back (each segment through its own).
    let latestSyncPoint = Mutex<SyncPoint?>(nil)
    /// The index's marks as last changed, for readers that must not wait for `indexLock`.
    let publishedMarks = Mutex<[Mark]>([])
    /// The wall clock's discipline as last read, for the next segments (rotation thread only).
    private var lastWallClock: ClockQuality?
    /// How long one reading serves: chronyd's and ptp4l's figures move over minutes, and a
    /// recording in 2 s segments need not run chronyc every 2 s beside its writers.
    static let wallClockReadingServesNs: UInt64 = 60_000_000_000

    /// Streams whose capture ended before the stop (a device gone), by their position among the
    /// sources: why, and when. Told on the capture thread, read on the rotation thread.
    private let endedCaptures = Mutex<[Int: (error: String, atNs: UInt64)]>([:])

    /// A stream's capture ended early: every segment that closes after `atNs` says so in its
    /// sidecar (`ended_early`), the ones it is absent from included. Any thread.
    public func noteCaptureEnded(stream id: String, error: String, atNs: UInt64) {
        guard let position = sources.firstIndex(where: { $0.descriptor.id == id }) else { return }
        endedCaptures.withLock { $0[position] = (error, atNs) }
    }

    /// The first segment's sync point, once it is taken; any thread.
    public var firstSyncPoint: SyncPoint? { firstSyncPointTaken.withLock { $0 } }

    struct Watches {
        var open: [(segment: String, watch: DiskWatch)] = []
        var finished: [(segment: String, watch: DiskWatch)] = []
        var past: [DiskWatch.Summary] = []
    }
    /// What happened that the user should hear about (a deletion, a segment kept): the front
    /// end's logger. From the rotation thread.
    let logger: Logger

    public init(
        directory: String, hostId: String, sources: [CaptureSource], settings: Settings,
        sessionOptions: SyncSession.Options, directIO: Bool, logger: Logger = .silent(label: "fieldcap.segments")
    ) {
        self.directory = directory
        self.hostId = hostId
        self.sources = sources
        self.settings = settings
        self.sessionOptions = sessionOptions
        self.directIO = directIO
        self.logger = logger
        index = RecordingIndex(
            fieldcapVersion: Sidecar.fieldcapVersion, hostId: hostId, segmentSeconds: Double(settings.lengthNs) / 1e9,
            maxStorageBytes: settings.budget.maxBytes, keepSeconds: settings.budget.keepNs.map { Double($0) / 1e9 },
            streams: sources.map { source in
                let descriptor = source.descriptor
                return RecordingIndex.Stream(
                    id: descriptor.id, kind: descriptor.kind.rawValue, device: descriptor.device,
                    nominalRate: descriptor.nominalRate, format: descriptor.videoFormat?.description)
            })
    }

    /// What the recording holds on disk now: its finished segments (as the index has them) and
    /// the files of the ones being written. Any thread; cheap on a recording of thousands of
    /// segments (it looks at the open ones only).
    public var bytesNow: UInt64 {
        let open = openDirectories.withLock { $0 }
        return open.reduce(finishedBytes.load(ordering: .relaxed)) { $0 + SessionFiles.bytesOnDisk($1) }
    }

    /// Takes each source's report; call it before capture starts (a report reads counters the
    /// capture thread owns once it runs).
    public func takeStartReports() { startReports = sources.map(\.report) }

    /// About how many bytes one segment of `seconds` of these streams takes: raw frames (a
    /// compressed one guessed at a quarter byte a pixel), each frame's log and timestamp lines,
    /// each sample's two lines. For refusing a budget smaller than one segment.
    public static func estimatedBytes(streams: [StreamDescriptor], seconds: Double) -> UInt64 {
        var perSecond = 0.0
        for stream in streams {
            if let format = stream.videoFormat {
                let frame =
                    format.pixelFormat.frameBytes(width: format.width, height: format.height)
                    ?? format.width * format.height / 4
                perSecond += stream.nominalRate * Double(frame + 400)
            } else {
                perSecond += stream.nominalRate * Double(120 + 40 * max(1, stream.channels.count))
            }
        }
        return UInt64(perSecond * seconds)
    }

    /// The directory name of segment `number`, starting at `wall`.
    static func name(number: Int, wall: Date) -> String {
        let stamp = SyncPoint.isoDatetime(wallClockNs: UInt64(max(0, wall.timeIntervalSince1970 * 1e9)))
        // 2026-11-23T14:02:05.123Z -> 20261123T140205Z: sortable, no colons (FAT, Windows shares).
        let compact = stamp.prefix(19).filter { $0 != "-" && $0 != ":" }
        let digits = String(number)
        return String(repeating: "0", count: max(0, 8 - digits.count)) + digits + "-\(compact)Z"
    }

    /// The wall-clock time of a `CLOCK_MONOTONIC_RAW` time, through `syncPoint`.
    static func wall(_ ns: UInt64, _ syncPoint: SyncPoint) -> Date {
        let offset = Double(Int64(bitPattern: ns &- syncPoint.monotonicNs)) / 1e9
        return Date(timeIntervalSince1970: Double(syncPoint.wallClockNs) / 1e9 + offset)
    }

    public func openSegment(
        number: Int, startNs: UInt64, endNs: UInt64, streams: [StreamDescriptor]
    ) throws
        -> RecordSink
    {
        // The sync point first: it names the directory with the segment's start in UTC.
        let probe = SyncPoint.createNow(hostId: hostId)
        let name = Self.name(number: number, wall: Self.wall(startNs, probe))
        let path = "\(directory)/\(name)"
        guard mkdir(path, 0o755) == 0 else {
            throw SessionDirectoryError(
                message: "cannot create segment \(path): \(String(cString: strerror(errno))) (errno \(errno))")
        }
        let layout = SessionLayout(directory: path)
        let session = SyncSession(hostId: hostId, outputDir: path, options: sessionOptions)
        let syncPoint = try session.start()
        firstSyncPointTaken.withLock { if $0 == nil { $0 = syncPoint } }
        latestSyncPoint.withLock { $0 = syncPoint }
        // On the rotation thread, which capture does not wait for; read again once a minute
        // (the sidecar says how long after its sync point each reading was taken: negative
        // for one taken before it).
        let wallClock: ClockQuality
        if let last = lastWallClock, MonotonicClock.now() - last.readAtMonotonicRawNs < Self.wallClockReadingServesNs {
            wallClock = last
        } else {
            wallClock = settings.wallClock.read()
            lastWallClock = wallClock
        }
        try settings.calibration?.install(in: path)
        try Sidecar.writeStart(
            hostId: hostId, syncPoint: syncPoint, sources: sources, layout: layout,
            linkDirectory: session.outputDir.path,
            segment: number, calibration: settings.calibration, encodings: settings.encodings,
            encoderThreads: settings.encoderThreads, wallClock: wallClock, captureId: settings.captureId)
        let sink = VideoSessionSink(
            session: session, directIO: directIO, encodings: settings.encodings,
            encoderThreads: settings.encoderThreads, previewTaps: settings.previewTaps)
        try sink.open(streams: streams)
        open[number] = Open(
            session: session, sink: sink, syncPoint: syncPoint, wallClock: wallClock, layout: layout,
            startedWall: Date())
        openDirectories.withLock { $0.append(path) }
        watches.withLock { $0.open.append((name, session.diskWatch)) }
        indexLock.lock()
        defer { indexLock.unlock() }
        index.segments.append(
            RecordingIndex.Segment(
                number: number, directory: name, state: .recording, startMonotonicRawNs: startNs,
                endMonotonicRawNs: endNs, startUtc: Sidecar.utc(Self.wall(startNs, syncPoint)),
                endUtc: Sidecar.utc(Self.wall(endNs, syncPoint))))
        try index.write(directory: directory)
        return sink
    }

    public func closeSegment(_ segment: FinishedSegment, sink: RecordSink, final: Bool) throws -> [String: Int] {
        guard let open = open.removeValue(forKey: segment.number) else {
            preconditionFailure("segment \(segment.number) was not opened here")
        }
        let counts = try sink.close()
        if final {
            // The stop's reason and the sources' final reports come with `finish`.
            stopped.append(Stopped(open: open, segment: segment))
            return counts
        }
        try writeSidecar(
            open, segment, reason: "segment", stoppedWall: Self.wall(segment.endNs, open.syncPoint),
            stoppedMonotonicNs: segment.endNs)
        indexLock.lock()
        record(segment, open: open, state: .complete, untilNs: segment.endNs)
        enforceBudget()
        do {
            try index.write(directory: directory)
            indexLock.unlock()
        } catch {
            indexLock.unlock()
            throw error
        }
        if let rotated = settings.rotated, let next = self.open[segment.number + 1] {
            rotated(PathName.base(of: next.layout.directory))
        }
        return counts
    }

    public func discardSegment(number: Int, sink: RecordSink) {
        _ = try? sink.close()
        guard let open = open.removeValue(forKey: number) else { return }
        openDirectories.withLock { $0.removeAll { $0 == open.layout.directory } }
        watches.withLock { $0.open.removeAll { $0.watch === open.session.diskWatch } }
        try? FileManager.default.removeItem(atPath: open.layout.directory)
        indexLock.lock()
        index.segments.removeAll { $0.number == number }
        indexLock.unlock()
    }

    /// Writes the sidecars of the segments the stop finished (the last one with the sources'
    /// final reports and the recording's summary of how each stream ended) and the final index.
    public func finish(reason: String, summary: [Recorder.StreamSummary]) throws {
        var firstError: Error?
        let stoppedNs = MonotonicClock.now()
        indexLock.lock()
        defer { indexLock.unlock() }
        for (position, stop) in stopped.enumerated() {
            let last = position == stopped.count - 1
            do {
                try writeSidecar(
                    stop.open, stop.segment, reason: reason, stoppedWall: Date(),
                    stoppedMonotonicNs: stoppedNs, final: last ? summary : nil)
            } catch { firstError = firstError ?? error }
            record(stop.segment, open: stop.open, state: .complete, untilNs: min(stop.segment.endNs, stoppedNs))
        }
        stopped = []
        index.state = "complete"
        index.stopReason = reason
        do { try index.write(directory: directory) } catch { firstError = firstError ?? error }
        if let firstError { throw firstError }
    }

    /// The directories of the segments the stop finished, for cutting them back after a failed
    /// write.
    public var stoppedSegmentDirectories: [String] { stopped.map(\.open.layout.directory) }

    private func writeSidecar(
        _ open: Open, _ segment: FinishedSegment, reason: String, stoppedWall: Date, stoppedMonotonicNs: UInt64,
        final summary: [Recorder.StreamSummary]? = nil
    ) throws {
        let segmentSummary = zip(sources, segment.tallies).enumerated().map { position, pair in
            let (source, tally) = pair
            var stream = Recorder.StreamSummary(
                id: source.descriptor.id, written: tally.records, dropped: tally.missing,
                droppedRange: tally.missingRuns.first.map { $0.lowerBound...(tally.missingRuns.last!.upperBound) },
                droppedRuns: tally.missingRuns,
                capturedSpanNs: tally.firstCaptureNs.map { $0...(tally.lastCaptureNs ?? $0) })
            stream.encoderDropped = tally.encoderDropped
            stream.encoderDroppedRuns = tally.encoderDroppedRuns
            stream.droppedRunsTruncated = tally.runsTruncated
            // The times the device was away that reach into this segment.
            let absences = summary?[position].absences ?? source.presence?.absences ?? []
            stream.absences = absences.filter {
                $0.overlaps(startNs: segment.startNs, endNs: stoppedMonotonicNs)
            }
            if let ended = summary?[position] {
                stream.captureError = ended.captureError
                stream.endedEarlyAtNs = ended.endedEarlyAtNs
            } else if let ended = endedCaptures.withLock({ $0[position] }), ended.atNs <= stoppedMonotonicNs {
                stream.captureError = ended.error
                stream.endedEarlyAtNs = ended.atNs
            }
            return stream
        }
        var sidecar = Sidecar(
            hostId: hostId, syncPoint: open.syncPoint, startedWall: open.startedWall, stoppedWall: stoppedWall,
            stopReason: reason, sources: sources, summary: segmentSummary, videoWrites: open.sink.videoWrites,
            diskStalls: open.session.diskWatch.summary(), diskStallNs: open.session.diskWatch.stallNs,
            layout: open.layout, linkDirectory: open.session.outputDir.path)
        sidecar.reports = summary == nil ? startReports : nil
        sidecar.segment = segment.number
        sidecar.stoppedMonotonicNs = stoppedMonotonicNs
        sidecar.startedMonotonicNs = segment.startNs
        sidecar.calibration = settings.calibration
        sidecar.encodings = settings.encodings
        sidecar.encoderThreads = settings.encoderThreads
        sidecar.encoderInputs = open.sink.encoderInputs
        sidecar.wallClock = open.wallClock
        sidecar.captureId = settings.captureId
        try sidecar.write()
    }

    /// `untilNs`: where the segment ended, its scheduled end or the stop.
    private func record(
        _ segment: FinishedSegment, open: Open, state: RecordingIndex.Segment.State, untilNs: UInt64
    ) {
        guard let position = index.segments.firstIndex(where: { $0.number == segment.number }) else { return }
        var entry = index.segments[position]
        entry.state = state
        let bytes = SessionFiles.bytesOnDisk(open.layout.directory)
        entry.bytes = bytes
        finishedBytes.add(bytes, ordering: .relaxed)
        openDirectories.withLock { $0.removeAll { $0 == open.layout.directory } }
        watches.withLock { watches in
            guard let position = watches.open.firstIndex(where: { $0.watch === open.session.diskWatch }) else { return }
            let finished = watches.open.remove(at: position)
            watches.finished.append(finished)
            watches.past += Self.named(finished.watch.summary(), segment: finished.segment)
        }
        entry.streams = Dictionary(
            uniqueKeysWithValues: zip(sources, segment.tallies).map { source, tally in
                var counts = RecordingIndex.StreamCounts(
                    records: tally.records, firstCaptureNs: tally.firstCaptureNs,
                    lastCaptureNs: tally.lastCaptureNs, firstSequence: tally.firstSequence,
                    lastSequence: tally.lastSequence, missing: tally.missing + tally.encoderDropped,
                    firstAfterStartSeconds: tally.firstCaptureNs.map {
                        Double(Int64(bitPattern: $0 &- segment.startNs)) / 1e9
                    })
                // The times the device was away within the segment, each for its part of it.
                let untilNs = max(untilNs, segment.startNs)
                let away = (source.presence?.absences ?? []).filter {
                    $0.overlaps(startNs: segment.startNs, endNs: untilNs)
                }
                if !away.isEmpty {
                    counts.away = away.map { absence in
                        RecordingIndex.Away(
                            leftMonotonicRawNs: absence.leftNs,
                            returnedMonotonicRawNs: absence.returnedNs.flatMap { $0 <= untilNs ? $0 : nil },
                            recordsAtNominalRate: absence.recordsWorth(
                                rate: source.descriptor.nominalRate, fromNs: segment.startNs, untilNs: untilNs))
                    }
                }
                return (source.descriptor.id, counts)
            })
        index.segments[position] = entry
    }

    /// Deletes the oldest finished segments the budget no longer has room or time for. Never
    /// one being written, never one whose directory holds a file fieldcap did not write there.
    private func enforceBudget() {
        guard settings.budget.isLimited else { return }
        let openBytes = open.values.reduce(UInt64(0)) { $0 + SessionFiles.bytesOnDisk($1.layout.directory) }
        let deletions = settings.budget.deletions(
            in: index, marks: index.marks ?? [], openBytes: openBytes, ownBytes: SessionFiles.bytesOnDisk(directory),
            nowNs: MonotonicClock.now(),
            maxLabel: settings.maxStorageLabel, keepLabel: settings.keepLabel)
        for deletion in deletions {
            guard let position = index.segments.firstIndex(where: { $0.number == deletion.number }) else { continue }
            let entry = index.segments[position]
            let path = "\(directory)/\(entry.directory)"
            if let stranger = SessionFiles.stranger(in: path, streams: index.streams.map(\.id)) {
                index.segments[position].kept = "holds \(stranger), which fieldcap did not write: not deleted"
                logger.warning(
                    """
                    segment \(entry.directory) kept over \(deletion.reason): \
                    it holds \(stranger), which fieldcap did not write
                    """)
                continue
            }
            do {
                try FileManager.default.removeItem(atPath: path)
            } catch {
                index.segments[position].kept = "could not be deleted: \(errorText(error))"
                logger.warning("segment \(entry.directory) could not be deleted: \(errorText(error))")
                continue
            }
            index.segments[position].state = .deleted
            finishedBytes.subtract(entry.bytes ?? 0, ordering: .relaxed)
            index.segments[position].deleted = RecordingIndex.Deletion(
                utc: Sidecar.utc(Date()), reason: deletion.reason)
            if let dropped = deletion.droppedMark { giveUp(mark: dropped, reason: deletion.reason) }
            logger.notice("deleted segment \(entry.directory) (\(deletion.reason))")
        }
    }
}

extension SegmentedSessions: DiskStalls {
    public var stallNs: UInt64 { DiskWatch().stallNs }

    /// Stalls going on now in the segments being written, and those that ended since the last
    /// call in any segment (one finished meanwhile too), each file named `SEGMENT/FILE`.
    public func takeRecentStalls() -> [DiskWatch.Stall] {
        watches.withLock { watches in
            let looked = watches.open + watches.finished
            watches.finished = []
            return looked.flatMap { segment, watch in
                watch.takeRecentStalls().map { stall in
                    var stall = stall
                    stall.file = "\(segment)/\(stall.file)"
                    return stall
                }
            }
        }
    }

    /// The stalls of every segment so far, finished or being written.
    public func summary() -> [DiskWatch.Summary] {
        watches.withLock { watches in
            watches.past + watches.open.flatMap { Self.named($0.watch.summary(), segment: $0.segment) }
        }
    }

    static func named(_ summaries: [DiskWatch.Summary], segment: String) -> [DiskWatch.Summary] {
        summaries.map { summary in
            var summary = summary
            summary.file = "\(segment)/\(summary.file)"
            return summary
        }
    }
}
