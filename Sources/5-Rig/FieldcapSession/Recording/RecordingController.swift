import FieldcapClockQuality
import FieldcapCore
import FieldcapGPIO
import FieldcapMedia
import FieldcapSegments
import FieldcapSystem
import FoundationEssentials
import Logging
import SyncField
import Synchronization

/// One recording's lifecycle, for any front end: `start` makes the session directory and starts
/// capture and writing; `checkStop` says when the recording should end by itself (its duration,
/// a failed writer, the disk's free space below the minimum); `statistics` is the live status;
/// `stop` finishes every file and writes the sidecar. The front end owns the rest: signals, the
/// terminal, exit codes.
///
/// Driven by one thread (the front end's), which calls `start`, `checkStop`, `statistics` and
/// `stop` in turn; the capture and writer threads are the recorder's.
public final class RecordingController {
    public struct Settings: Sendable {
        public var hostId: String
        /// The session directory to create, or nil for `root/HOST-UTCTIME`.
        public var out: String?
        public var root: String
        public var duration: TimeSpan?
        public var syncEvery: TimeSpan
        public var minFree: ByteSize
        /// Write the videos with direct I/O where the filesystem does it (`MatroskaWriter`).
        public var directIO: Bool
        /// Record in consecutive segments, each a session of its own, inside one recording
        /// directory (`SegmentedSessions`); nil records one session.
        public var segments: SegmentedSessions.Settings?
        /// Live previews, by stream id (`Recorder.Options.frameTaps`).
        public var frameTaps: [String: FrameTap] = [:]
        /// Live sensor viewers, by stream id (`Recorder.Options.sampleTaps`).
        public var sampleTaps: [String: SampleTap] = [:]
        /// Live viewers of fed streams, by stream id (`Recorder.Options.feedTaps`).
        public var feedTaps: [String: FeedTap] = [:]
        /// The cameras' calibration (`--intrinsics`), copied into the session and its sidecar.
        public var calibration: SessionCalibration?
        /// How each camera's frames are stored, by stream id (`encode=`); raw when not named.
        public var encodings: [String: VideoEncoding] = [:]
        /// Encoding threads of the cameras that have more than one (`threads=`), by stream id.
        public var encoderThreads: [String: Int] = [:]
        /// Where the wall clock's discipline is read at each sync point (`--wall-clock`).
        public var wallClock = ClockQualityReader()
        /// The capture across rigs this recording belongs to, in every sidecar (`capture_id`).
        public var captureId: String?
        /// Take the sync point at this wall-clock instant (a fleet's shared start): everything
        /// else is ready by then, and `start` waits for it by this host's own clock, unless it is
        /// called off meanwhile (then `start` throws `StartError.cancelled` and leaves nothing).
        public var startAt: ScheduledStart?
        /// The window around a mark that names none (`mark_before`, `mark_after` in the config).
        public var markWindows = MarkWindows()
        /// The GPIO lines whose rising edges mark the recording (the rig layer watches them).
        public var markLines: [GPIOMarkSpec] = []
        /// What happens while recording, told as it happens on the thread it happens on: a
        /// capture thread that ended, the rotation thread (or the stopping one, for the segment
        /// the stop finishes), the disk gauge's (or the one calling `start`, for its first
        /// reading). See `Event`; a front end that wants them only between its start and its
        /// stop gates them (`EventGate`).
        public var onEvent: (@Sendable (Event) -> Void)?

        public init(
            hostId: String, out: String? = nil, root: String, duration: TimeSpan? = nil,
            syncEvery: TimeSpan = TimeSpan(seconds: 1), minFree: ByteSize = RecordingController.defaultMinFree,
            directIO: Bool = true, segments: SegmentedSessions.Settings? = nil
        ) {
            self.segments = segments
            self.hostId = hostId
            self.out = out
            self.root = root
            self.duration = duration
            self.syncEvery = syncEvery
            self.minFree = minFree
            self.directIO = directIO
        }
    }

    /// What a front end hears while the recording runs (`Settings.onEvent`), pushed when it
    /// happens rather than found by looking.
    public enum Event: Sendable, Equatable {
        /// A stream's capture ended early (a camera unplugged); the others go on.
        case streamEnded(stream: String, error: String)
        /// A stream's device went away (unplugged); the stream waits for it, the others go on.
        case streamAway(stream: String, reason: String)
        /// A stream's device came back (as `node`) after `awaySeconds`, and the stream goes on.
        case streamReturned(stream: String, node: String, awaySeconds: Double)
        /// A segmented recording finished a segment and writes the next, `segment` (its
        /// directory's name); the finished one is in the index.
        case segmentRotated(segment: String)
        /// The free space fell below twice the minimum (once a recording): the recording stops by
        /// itself at the minimum.
        case diskLow(freeBytes: UInt64, minFreeBytes: UInt64)
        /// A mark was taken (`mark`); `warnings`: what the user should hear about it (the budget
        /// cannot keep every marked window).
        case marked(Mark, warnings: [String])
        /// The storage budget gave up a mark: its window no longer fits, and its segments were
        /// deleted (`reason`: the limit).
        case markGivenUp(Mark, reason: String)
    }

    /// Why a recording stopped. Its description is the sidecar's `stop_reason`.
    public enum StopReason: Equatable, Sendable, CustomStringConvertible {
        /// The duration asked for has passed.
        case duration
        /// The front end was told to stop (a signal's name, `SIGINT`; an API request...).
        case requested(String)
        /// The disk's free space fell below the minimum: stopped cleanly, the session is complete.
        case diskNearlyFull(free: UInt64, minFree: ByteSize)
        /// A writer failed while recording (seen before the stop).
        case writeFailed
        /// Writing failed as the recording stopped: the disk filled up, or another error.
        case writeError(String, diskFull: Bool)
        /// A segment could not be started or finished (segmented recordings).
        case segmentFailed(String)

        public var description: String {
            switch self {
            case .duration: "duration"
            case .requested(let who): who
            case .diskNearlyFull(let free, let minFree):
                "disk nearly full (\(ByteSize(bytes: free)) free, below --min-free \(minFree))"
            case .writeFailed: "write failed"
            case .writeError(let error, let diskFull): diskFull ? "disk full (\(error))" : "write failed (\(error))"
            case .segmentFailed(let error): "segment failed (\(error))"
            }
        }
    }

    /// The session as it ended.
    public struct Outcome {
        public var directory: String
        public var reason: StopReason
        public var summary: [Recorder.StreamSummary]
        /// Seconds from the start of capture to the stop.
        public var elapsed: Double
        /// The error that ended writing, if one did: the session was cut back to what every file
        /// holds and still validates.
        public var writeFailure: Error?
    }

    /// Refused before anything was made.
    public enum StartError: Error, CustomStringConvertible {
        /// The disk where the session would go has less free space than the minimum.
        case diskBelowMinFree(free: UInt64, path: String, minFree: ByteSize)
        case directory(SessionDirectoryError)
        /// The scheduled start was called off before its instant (a stop came first).
        case cancelled(atNs: UInt64)

        public var description: String {
            switch self {
            case .diskBelowMinFree(let free, let path, let minFree):
                "only \(ByteSize(bytes: free)) free where the session would go (\(path)), below "
                    + "--min-free \(minFree): free some space, record elsewhere, or lower --min-free"
            case .directory(let error): error.message
            case .cancelled(let atNs):
                "the start scheduled for \(SyncPoint.isoDatetime(wallClockNs: atNs)) "
                    + "was called off before its instant: nothing was recorded"
            }
        }
    }

    public static let defaultMinFree = ByteSize(bytes: 256 << 20)

    public let sources: [CaptureSource]
    public let settings: Settings
    /// Set by `start`.
    public private(set) var layout: SessionLayout?
    public private(set) var session: SyncSession?
    /// Segmented recordings: the segments and the sink that rotates them.
    public private(set) var segments: SegmentedSessions?
    private var segmentingSink: SegmentingSink?
    private var recorder: Recorder?
    private var sink: VideoSessionSink?
    private var reserve: DiskReserve?
    /// Held from the directory's creation to the end of `stop`: how readers know it is live.
    private var lock: RecordingLock?
    private var syncPoint: SyncPoint?
    private var wallClock: ClockQuality?
    private var startedWall = Date()
    /// The free space and the recording's bytes, read off this thread (a dead share must not hold
    /// `checkStop` or a status): from just before capture to the stop.
    public private(set) var diskGauge: DiskGauge?
    private var startedNs: UInt64 = 0
    /// The recording's marks, once capture runs: from any thread (`mark`).
    private let markBook = Mutex<MarkBook?>(nil)
    /// What the user last had to hear about the marks (the budget cannot keep them all, one was
    /// given up), for a status.
    private let lastMarkWarning = WarningBox()
    final class WarningBox: Sendable {
        let text = Mutex<String?>(nil)
    }

    /// What the user should hear about while recording (a segment deleted by the storage
    /// budget): the front end's logger, used from a recording thread. Silent unless handed one.
    private let logger: Logger

    public init(
        sources: [CaptureSource], settings: Settings, logger: Logger = .silent(label: "fieldcap.recording")
    ) {
        self.sources = sources
        self.settings = settings
        self.logger = logger
    }

    public var directory: String? { layout?.directory }

    /// The file system the videos are written to, once started (nil without a camera).
    public private(set) var writePath: WritePath?

    /// Which path the videos take on their file system, and why (#43): for the front end to say
    /// once, at start.
    public var writePathLine: String? {
        guard let writePath else { return nil }
        let line = writePath.description(directIO: settings.directIO)
        return ([line] + [fileSizeWarning, writePath.hardMountWarning].compactMap { $0 }).joined(separator: "; ")
    }

    /// Where the videos' file system holds files too small for them (FAT's 4 GiB): the camera
    /// whose video reaches the limit first, when it would within one file's span (a segment, or
    /// the recording), and what to do. The recording then stops as a failed write does (`File
    /// too large`), its session valid; this says so before, not after.
    public var fileSizeWarning: String? {
        guard let writePath, let limit = writePath.largestFileBytes else { return nil }
        // Cameras stored as captured, whose bytes a second are known; an encoder's are smaller.
        let rates = sources.compactMap { source -> (id: String, bytesPerSecond: Double)? in
            let descriptor = source.descriptor
            guard let format = descriptor.videoFormat, format.pixelFormat != .mjpeg,
                !(settings.encodings[descriptor.id].map { $0.encodes(format) } ?? false),
                let bytes = format.pixelFormat.frameBytes(width: format.width, height: format.height),
                descriptor.nominalRate > 0
            else { return nil }
            return (descriptor.id, Double(bytes) * descriptor.nominalRate)
        }
        return Self.fileSizeWarning(
            limit: limit, fileSystem: writePath.fileSystemName, cameras: rates,
            span: settings.segments.map { Double($0.lengthNs) / 1e9 } ?? settings.duration?.seconds)
    }

    /// `fileSizeWarning` from its facts: each raw camera's bytes a second, and how long one file
    /// of the recording runs (nil: until stopped).
    static func fileSizeWarning(
        limit: UInt64, fileSystem: String, cameras: [(id: String, bytesPerSecond: Double)], span: Double?
    ) -> String? {
        guard let fastest = cameras.max(by: { $0.bytesPerSecond < $1.bytesPerSecond }) else { return nil }
        let secondsToLimit = Double(limit) / fastest.bytesPerSecond
        if let span, span < secondsToLimit { return nil }
        let minutes = max(1, Int(secondsToLimit / 60 * 0.8))
        return
            "\(fileSystem) holds files of at most 4 GiB, which \(fastest.id)'s video reaches "
            + "after about \(TimeSpan(seconds: secondsToLimit.rounded())), and the recording "
            + "then stops: record in segments shorter than that (--segment \(minutes)m)"
    }

    /// The session's sync point, or a segmented recording's first; nil until taken.
    public var firstSyncPoint: SyncPoint? { syncPoint ?? segments?.firstSyncPoint }

    /// The lines a stream writes a second, for the SyncField writer's sleep: its rate, at least 1;
    /// a fed stream whose program said no rate, 10,000 (a program may send as fast as it likes).
    static func entriesPerSecond(_ stream: StreamDescriptor) -> Double {
        stream.kind == .feed && stream.nominalRate <= 0 ? 10_000 : max(1, stream.nominalRate)
    }

    /// Makes the session directory (refusing a disk already below the minimum free space), starts
    /// the SyncField session, writes the sidecar's start, and starts capture and writing.
    /// The calling thread's signal mask is inherited by every thread started here.
    ///
    /// `beforeCapture` runs once the session's directory and files exist, before any capture
    /// thread starts: the moment to read the sources' reports (what setup granted), which read
    /// counters the capture threads own once they run.
    public func start(beforeCapture: (SessionLayout) throws -> Void = { _ in }) throws {
        startedWall = Date()
        let target = settings.out.map { PathName.directory(of: $0) } ?? settings.root
        let shown = target.isEmpty ? "." : target
        if let free = freeBytes(at: shown) ?? freeBytes(at: "."), free < settings.minFree.bytes {
            throw StartError.diskBelowMinFree(free: free, path: shown, minFree: settings.minFree)
        }
        let directory: String
        do {
            directory = try SessionDirectory.create(
                explicit: settings.out, root: settings.root, hostId: settings.hostId, at: startedWall)
        } catch let error as SessionDirectoryError {
            throw StartError.directory(error)
        }
        lock = try RecordingLock(directory: directory)
        let layout = SessionLayout(directory: directory)
        self.layout = layout

        let cameras = sources.filter { $0.descriptor.kind == .video }
        if !cameras.isEmpty { writePath = WritePath(path: directory) }
        var sessionOptions = SyncSession.Options()
        sessionOptions.syncInterval = settings.syncEvery.seconds
        reserve = DiskReserve(
            layout: layout,
            bytes: DiskReserve.bytes(
                streams: sources.count, cameras: cameras.count,
                batchBytes: sessionOptions.batchBytes, frameLogBatchBytes: VideoSessionSink.frameLogBatchBytes))
        var recorderOptions = Recorder.Options()
        recorderOptions.syncIntervalNs = UInt64(settings.syncEvery.seconds * 1e9)
        // A camera encoded as JPEG is previewed from its encoder's JPEGs (VideoSessionSink), not
        // from its raw frames encoded a second time; unless the preview covers faces in them.
        let jpegPreviews = settings.frameTaps.filter { id, tap in
            guard !tap.wantsRawFrames, let encoding = settings.encodings[id], case .jpeg = encoding else {
                return false
            }
            return encoding.encodes(tap.format)
        }
        recorderOptions.frameTaps = settings.frameTaps.filter { jpegPreviews[$0.key] == nil }
        recorderOptions.sampleTaps = settings.sampleTaps
        recorderOptions.feedTaps = settings.feedTaps
        if let tell = settings.onEvent {
            recorderOptions.captureEnded = { stream, error, _ in tell(.streamEnded(stream: stream, error: error)) }
            recorderOptions.presenceChanged = { stream, absence in
                if let returned = absence.returnedNs {
                    tell(
                        .streamReturned(
                            stream: stream, node: absence.returnedAs ?? "",
                            awaySeconds: Double(returned - absence.leftNs) / 1e9))
                } else if absence.refusal == nil {
                    tell(.streamAway(stream: stream, reason: absence.reason))
                }
            }
        }
        // Idle writers poll, and on a small CPU each wake-up costs: each of the recorder's writers
        // sleeps as long as its own streams allow (a video's while a third of its camera's
        // buffers fill, the sensors' 100 ms), the SyncField writer while a quarter of its queue
        // fills. The queue holds 4,096 entries (0.8 MB) rather than the library's 16,384
        // (3.3 MB, all touched at start): 4 s of a 1 kHz IMU. Its writer only hands batches to the
        // kernel (a sync thread makes them durable), so it keeps up through a stalled disk; if it
        // ever did not, a full queue makes the sensors' writer wait, with an IMU's capture ring
        // (4,096 records, 4 s more) still taking what comes meanwhile.
        recorderOptions.idlePollNs = 100_000_000
        sessionOptions.queueCapacity = 4096
        sessionOptions.idlePollNs = sessionOptions.idlePollNs(
            forEntriesPerSecond: sources.reduce(0) { $0 + Self.entriesPerSecond($1.descriptor) })
        if var segmenting = settings.segments {
            segmenting.calibration = settings.calibration
            segmenting.encodings = settings.encodings
            segmenting.encoderThreads = settings.encoderThreads
            segmenting.wallClock = settings.wallClock
            segmenting.captureId = settings.captureId
            segmenting.previewTaps = jpegPreviews
            segmenting.markWindows = settings.markWindows
            if let tell = settings.onEvent {
                segmenting.rotated = { next in tell(.segmentRotated(segment: next)) }
            }
            segmenting.markGivenUp = { [lastMarkWarning, tell = settings.onEvent] mark, reason in
                lastMarkWarning.text.withLock {
                    $0 = "mark \(mark.id) \"\(mark.label)\" given up: its window no longer fits (\(reason))"
                }
                tell?(.markGivenUp(mark, reason: reason))
            }
            let segments = SegmentedSessions(
                directory: directory, hostId: settings.hostId, sources: sources, settings: segmenting,
                sessionOptions: sessionOptions, directIO: settings.directIO, logger: logger)
            self.segments = segments
            // A stream that ends is said in every segment after, each of which it is absent from.
            let told = recorderOptions.captureEnded
            recorderOptions.captureEnded = { stream, error, atNs in
                segments.noteCaptureEnded(stream: stream, error: error, atNs: atNs)
                told?(stream, error, atNs)
            }
            diskGauge = makeDiskGauge(directory) { segments.bytesNow }
            try beforeCapture(layout)
            segments.takeStartReports()
            // The first segment's sync point is taken as capture starts.
            try waitForStart(directory)
            // The segments' boundaries and the duration count from one instant: a start slowed by
            // a busy machine must not push the last records past the last boundary asked for.
            let origin = MonotonicClock.now()
            let sink = SegmentingSink(
                schedule: SegmentSchedule(startNs: origin, lengthNs: segmenting.lengthNs), store: segments)
            segmentingSink = sink
            let recorder = Recorder(sources: sources, sink: sink, options: recorderOptions)
            self.recorder = recorder
            try recorder.start()
            startedNs = origin
            markBook.withLock { $0 = MarkBook(keeper: segments, windows: settings.markWindows) }
            return
        }
        let session = SyncSession(hostId: settings.hostId, outputDir: directory, options: sessionOptions)
        self.session = session
        try waitForStart(directory)
        let syncPoint = try session.start()
        self.syncPoint = syncPoint
        // Right after the sync point, before capture: chronyc or pmc answer in milliseconds, and a
        // silent daemon costs at most the reader's timeout, once.
        let wallClock = settings.wallClock.read()
        self.wallClock = wallClock
        try settings.calibration?.install(in: directory)
        try Sidecar.writeStart(
            hostId: settings.hostId, syncPoint: syncPoint, sources: sources, layout: layout,
            linkDirectory: session.outputDir.path, calibration: settings.calibration, encodings: settings.encodings,
            encoderThreads: settings.encoderThreads, wallClock: wallClock, captureId: settings.captureId)
        let sink = VideoSessionSink(
            session: session, directIO: settings.directIO, encodings: settings.encodings,
            encoderThreads: settings.encoderThreads, previewTaps: jpegPreviews)
        self.sink = sink
        let recorder = Recorder(sources: sources, sink: sink, options: recorderOptions)
        self.recorder = recorder
        diskGauge = makeDiskGauge(directory) { RecordingStatusMeter.fileBytes(in: directory) }
        try beforeCapture(layout)
        try recorder.start()
        startedNs = MonotonicClock.now()
        let marks = SessionMarks(directory: directory, syncPoint: syncPoint, startNs: syncPoint.monotonicNs)
        markBook.withLock { $0 = MarkBook(keeper: marks, windows: settings.markWindows) }
    }

    /// Takes a mark on the recording (`MarkBook.mark`) and tells it (`Event.marked`). Any thread;
    /// refused before capture runs and once the stop began.
    public func mark(_ request: MarkRequest) throws(MarkRefusal) -> (mark: Mark, warnings: [String]) {
        guard let book = markBook.withLock({ $0 }) else {
            throw MarkRefusal(.conflict, "no recording is running: start one first")
        }
        let (mark, warnings) = try book.mark(request)
        logger.notice(
            """
            marked \(mark.id) "\(mark.label)" (\(mark.source)) at \(mark.utc): window \(mark.beforeSeconds) s before, \
            \(mark.afterSeconds) s after
            """)
        for warning in warnings { logger.warning("\(warning)") }
        if let last = warnings.last { lastMarkWarning.text.withLock { $0 = last } }
        settings.onEvent?(.marked(mark, warnings: warnings))
        return (mark, warnings)
    }

    /// Tells the user something the recording's marks met (a GPIO line's lost edges), through the
    /// front end's logger. Any thread.
    public func warn(_ text: String) { logger.warning("\(text)") }

    /// The recording's marks so far (none before capture runs).
    public var marks: [Mark] { markBook.withLock { $0 }?.marks ?? [] }

    /// What the user last had to hear about the marks, if anything: the budget cannot keep every
    /// marked window, or gave one up. Any thread.
    public var marksWarning: String? { lastMarkWarning.text.withLock { $0 } }

    /// The gauge of the disk under `directory`; a free space below twice the minimum is told as
    /// `diskLow`, in time to hear of it before the recording stops by itself.
    private func makeDiskGauge(_ directory: String, countBytes: @escaping @Sendable () -> UInt64) -> DiskGauge {
        let minFree = settings.minFree.bytes
        var low: (@Sendable (UInt64) -> Void)?
        if let tell = settings.onEvent {
            low = { free in tell(.diskLow(freeBytes: free, minFreeBytes: minFree)) }
        }
        let lowBelow = minFree > UInt64.max / 2 ? UInt64.max : 2 * minFree
        return DiskGauge(directory: directory, lowBelow: lowBelow, low: low, countBytes: countBytes)
    }

    /// Waits for the scheduled start, if there is one. Called off, it takes back what `start` made
    /// (the directory it created, its disk reserve and lock: nothing was captured), so no
    /// half-made session is left for `sessions rm` to refuse.
    private func waitForStart(_ directory: String) throws {
        guard let at = settings.startAt, !at.wait() else { return }
        diskGauge?.stop()
        diskGauge = nil
        reserve?.release()
        reserve = nil
        lock?.release()
        lock = nil
        segments = nil
        session = nil
        layout = nil
        try? FileManager.default.removeItem(atPath: directory)
        throw StartError.cancelled(atNs: at.atNs)
    }

    /// The disk's stalls while recording, for a status line: the session's, or every segment's.
    public var diskStalls: DiskStalls? { session?.diskWatch ?? segments }

    /// Seconds since capture started.
    public var elapsed: Double { Double(MonotonicClock.now() - startedNs) / 1e9 }

    /// Seconds until the duration ends (infinity without one).
    public var remaining: Double { (settings.duration?.seconds ?? .infinity) - elapsed }

    /// Each stream's records written, queued and dropped so far.
    public var statistics: [Recorder.StreamProgress] { recorder?.statistics ?? [] }

    /// Why the recording should stop now on its own, if it should.
    public func checkStop() -> StopReason? {
        if let duration = settings.duration, elapsed >= duration.seconds { return .duration }
        if recorder?.hasFailed == true { return .writeFailed }
        if let failure = segmentingSink?.rotationFailure { return .segmentFailed(failure) }
        if let free = diskGauge?.freeBytes, free < settings.minFree.bytes {
            return .diskNearlyFull(free: free, minFree: settings.minFree)
        }
        return nil
    }

    /// Stops capture, writes what was captured, finishes every file and writes the sidecar. A
    /// write that fails while stopping becomes the outcome's reason and `writeFailure`; the
    /// session is then cut back to what every file holds, so it still validates.
    public func stop(reason: StopReason) throws -> Outcome {
        if segments != nil { return try stopSegments(reason: reason) }
        guard let sink, let session, let layout, let syncPoint else { preconditionFailure("stop() before start()") }
        let stopped = stopRecorder(reason: reason)
        var sidecar = Sidecar(
            hostId: settings.hostId, syncPoint: syncPoint, startedWall: startedWall, stoppedWall: Date(),
            stopReason: stopped.reason.description, sources: sources, summary: stopped.summary,
            videoWrites: sink.videoWrites, diskStalls: session.diskWatch.summary(),
            diskStallNs: session.diskWatch.stallNs, layout: layout, linkDirectory: session.outputDir.path)
        // After the recorder stopped: every record it wrote was captured before this.
        sidecar.stoppedMonotonicNs = MonotonicClock.now()
        sidecar.calibration = settings.calibration
        sidecar.encodings = settings.encodings
        sidecar.encoderThreads = settings.encoderThreads
        sidecar.encoderInputs = sink.encoderInputs
        sidecar.wallClock = wallClock
        sidecar.captureId = settings.captureId
        // Not complete even if cutting back fails below (a video it cannot cut without losing
        // what it holds is left as it is).
        if stopped.writeFailure != nil { sidecar.state = "stopped: \(stopped.reason)" }
        try sidecar.write()
        if stopped.writeFailure != nil { try cutBack(layout.directory, reason: stopped.reason) }
        lock?.release()
        return stopped
    }

    /// `stop` for a segmented recording: the last segments get the stop's reason, the recording's
    /// index its end.
    private func stopSegments(reason: StopReason) throws -> Outcome {
        guard let segments else { preconditionFailure("stop() before start()") }
        let stopped = stopRecorder(reason: reason)
        let cut = segments.stoppedSegmentDirectories
        try segments.finish(reason: stopped.reason.description, summary: stopped.summary)
        if stopped.writeFailure != nil {
            for directory in cut { try cutBack(directory, reason: stopped.reason) }
        }
        lock?.release()
        return stopped
    }

    /// Gives back the disk reserve (the trailers, the manifest and the sidecar need room) and
    /// stops the recorder; a write that fails while stopping becomes the reason.
    private func stopRecorder(reason: StopReason) -> Outcome {
        guard let recorder, let layout else { preconditionFailure("stop() before start()") }
        // A mark now would land in files being finished: one being kept finishes first (under the
        // stop's watchdog, should the disk hold it).
        let book = markBook.withLock { book in
            defer { book = nil }
            return book
        }
        book?.close()
        diskGauge?.stop()
        reserve?.release()
        do {
            let summary = try recorder.stop()
            return Outcome(directory: layout.directory, reason: reason, summary: summary, elapsed: elapsed)
        } catch {
            return Outcome(
                directory: layout.directory, reason: .writeError("\(error)", diskFull: isDiskFull(error)),
                summary: recorder.finalSummary, elapsed: elapsed, writeFailure: error)
        }
    }

    /// After a failed write: files stopped at different points are cut back to what they all
    /// hold. The videos are cut in place (a full disk has no room for a copy).
    private func cutBack(_ directory: String, reason: StopReason) throws {
        guard let contents = Sidecar.Contents(layout: SessionLayout(directory: directory)) else { return }
        try SessionFinisher.finish(
            directory: directory, start: contents, rewriteVideos: false, state: "stopped: \(reason)"
        ) { _ in }
    }
}
