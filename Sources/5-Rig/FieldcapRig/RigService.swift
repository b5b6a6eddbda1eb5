import Dispatch
import FieldcapCore
import FieldcapFaces
import FieldcapPreview
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Logging
import SyncField
import Synchronization

/// The rig as `fieldcap serve` runs it: its devices as the config (or the command line) names
/// them, one recording at a time on command, with everything `fieldcap record` does (segments,
/// budget, sidecar; `fieldcap recover` after a crash), and the events of each.
public final class RigService: Sendable {
    /// What the service was started with: the config and the command line's values, over which
    /// each start request's own values go.
    public struct Base: Sendable {
        public var config: RigConfig?
        public var devices: [DeviceSpec]
        public var overrides: RecordingSettings.Overrides
        public var directIO: Bool
        /// Frames a second each camera's preview encodes at most.
        public var previewRate: Double
        /// The previews' JPEG quality, 1 to 100.
        public var previewQuality: Int
        /// Cover the faces in the previews (`serve --preview-blur-faces`; nil: as captured).
        public var previewFaces: FaceCover.Settings?
        /// The camera–IMU offset check, which a start may ask for; nil: none can.
        public var syncChecker: (any SyncChecker)?
        /// Check every recording whose start does not say (`serve --check-sync`).
        public var checkSyncByDefault: Bool

        public init(
            config: RigConfig?, devices: [DeviceSpec], overrides: RecordingSettings.Overrides, directIO: Bool = true,
            previewRate: Double = 10, previewQuality: Int = 80, previewFaces: FaceCover.Settings? = nil,
            syncChecker: (any SyncChecker)? = nil, checkSyncByDefault: Bool = false
        ) {
            self.config = config
            self.devices = devices
            self.overrides = overrides
            self.directIO = directIO
            self.previewRate = previewRate
            self.previewQuality = previewQuality
            self.previewFaces = previewFaces
            self.syncChecker = syncChecker
            self.checkSyncByDefault = checkSyncByDefault
        }
    }

    /// A start request's values: each nil keeps the service's.
    public struct StartRequest: Sendable {
        public var duration: TimeSpan?
        public var segment: TimeSpan?
        public var maxStorage: ByteSize?
        public var keep: TimeSpan?
        /// The capture across rigs (a fleet's start), into every sidecar.
        public var captureId: String?
        /// Take the sync point at this wall-clock instant (a fleet's shared start).
        public var startAtWallClockNs: UInt64?
        /// Check the camera–IMU offset once the recording has stopped (`Base.syncChecker`).
        public var checkSync: Bool?

        public init(
            duration: TimeSpan? = nil, segment: TimeSpan? = nil, maxStorage: ByteSize? = nil, keep: TimeSpan? = nil
        ) {
            self.duration = duration
            self.segment = segment
            self.maxStorage = maxStorage
            self.keep = keep
        }
    }

    /// A device as the service found it at start: what it was granted.
    public struct Device: Sendable {
        public var id: String
        public var kind: String
        public var device: String
        public var options: [String: String]
        public var granted: JSONValue
        public var summary: String
        public var timeSource: String
    }

    /// Why a request was refused; the service maps `kind` to an HTTP status (400, 409, 503).
    public struct Refusal: Error, CustomStringConvertible {
        public enum Kind: Sendable { case badRequest, conflict, unavailable }
        public var kind: Kind
        public var description: String
    }

    public let base: Base
    private let logger: Logger
    /// The settings without a request's values: root, host id, limits, the devices' plan.
    public let settings: RecordingSettings
    public let devices: [Device]
    public let events = EventHub()
    /// The checks after recordings (`Base.syncChecker`), one at a time.
    let syncChecks: SyncCheckQueue
    public let startedAt = Date()
    /// Each camera's live preview, fed by the recording when one runs, else by `PreviewCapture`.
    public let previews: Previews
    /// Each sensor's live samples, fed as the previews are.
    public let live: LiveSensors
    private let state = Mutex<State>(State())
    private let link = Mutex<ServerLink?>(nil)
    /// Opens and closes the cameras for the preview, one change at a time, off the server's
    /// threads (opening a camera blocks).
    private let cameraQueue = DispatchQueue(label: "fieldcap.preview-capture")
    /// How long the cameras stay open for the preview after its last viewer left: a page that
    /// reloads, or snapshots a few seconds apart, do not reopen them each time.
    static let previewLinger = 5.0

    struct State {
        var runner: RecordingRunner?
        /// Set while a start is opening devices, so a second start is refused, not queued.
        var starting = false
        /// A start waiting for its instant (a fleet's), with its capture id: a stop calls it off.
        var scheduled: (start: ScheduledStart, captureId: String?)?
        var last: StoppedEvent?
        /// The cameras capturing for the preview alone (no recording runs).
        var previewCapture: PreviewCapture?
        /// Why the preview's cameras could not be opened, the last time they were tried.
        var previewProblem: String?
        var shutDown = false
    }

    /// Resolves the settings and opens every device once, to know they work and what they grant
    /// (then closes them: each recording opens them anew). Each recording tells `logger` what it
    /// does on its own (segments deleted for the budget, a low disk).
    public init(base: Base, logger: Logger = .silent(label: "fieldcap.recording")) throws {
        self.base = base
        self.logger = logger
        syncChecks = SyncCheckQueue(events: events)
        settings = try RecordingSettings.resolve(config: base.config, devices: base.devices, overrides: base.overrides)
        let sources = try settings.plan.makeSources()
        devices = zip(settings.plan.specs, sources).map { spec, source in
            let report = source.report
            return Device(
                id: source.descriptor.id, kind: source.descriptor.kind.rawValue, device: source.descriptor.device,
                options: spec.options, granted: report.granted, summary: report.summary,
                timeSource: report.timeSource)
        }
        previews = Previews(
            cameras: sources.map(\.descriptor), maxRate: base.previewRate, quality: base.previewQuality,
            faces: base.previewFaces)
        live = LiveSensors(sensors: sources.map(\.descriptor))
        previews.onViewersChanged { [weak self] _ in self?.viewersChanged() }
        live.onViewersChanged { [weak self] _ in self?.viewersChanged() }
    }

    /// Why the previews show nothing while idle, if opening the cameras for them failed.
    public var previewProblem: String? { state.withLock { $0.previewProblem } }

    /// What live viewers watch now: the cameras (a preview has a viewer), the sensors (a live
    /// sample stream has one).
    private var watched: PreviewCapture.Watched {
        PreviewCapture.Watched(
            cameras: previews.viewerCount > 0 && !previews.streams.isEmpty,
            sensors: live.sensorViewerCount > 0)
    }

    private func viewersChanged() {
        if watched.any {
            cameraQueue.async { [self] in openPreviewCapture() }
        } else {
            cameraQueue.asyncAfter(deadline: .now() + Self.previewLinger) { [self] in
                if !watched.any { closePreviewCapture() }
            }
        }
    }

    /// Camera queue: opens the devices live viewers watch, unless a recording has them, is about
    /// to, or nobody watches any more; a capture of other devices than those watched now (a
    /// sensor viewer came to a camera's) is opened anew. One that captures more than is watched
    /// stays until the last viewer has gone.
    private func openPreviewCapture() {
        var wanted = watched
        let open = state.withLock { state -> Bool in
            guard state.runner == nil && !state.starting && !state.shutDown else { return false }
            guard let current = state.previewCapture?.watched else { return true }
            defer {
                wanted.cameras = wanted.cameras || current.cameras
                wanted.sensors = wanted.sensors || current.sensors
            }
            return (wanted.cameras && !current.cameras) || (wanted.sensors && !current.sensors)
        }
        guard open, wanted.any else { return }
        closePreviewCapture()
        do {
            let capture = try PreviewCapture(plan: settings.plan, previews: previews, live: live, watched: wanted)
            for problem in capture.sensorProblems { events.send(.previewUnavailable(error: problem)) }
            state.withLock {
                $0.previewCapture = capture
                $0.previewProblem = nil
            }
        } catch {
            state.withLock { $0.previewProblem = "\(error)" }
            events.send(.previewUnavailable(error: "\(error)"))
        }
    }

    /// Camera queue: closes the preview's cameras, if they are open.
    private func closePreviewCapture() {
        let capture = state.withLock { state in
            defer { state.previewCapture = nil }
            return state.previewCapture
        }
        capture?.stop()
    }

    /// Runs `body` on the camera queue and waits for it.
    private func onCameraQueue(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            cameraQueue.async {
                body()
                done.resume()
            }
        }
    }

    /// The capture server connection, once `serve --server` made one; the status shows it.
    public var serverLink: ServerLink? {
        get { link.withLock { $0 } }
        set { link.withLock { $0 = newValue } }
    }

    /// The directory being recorded, nil when idle.
    public var recordingDirectory: String? { state.withLock { $0.runner?.controller.value.directory } }

    /// The recording's sync point (a segmented recording's first), once taken.
    public var recordingSyncPoint: SyncPoint? { state.withLock { $0.runner?.controller.value.firstSyncPoint } }

    public var status: RigStatus {
        let (runner, last, scheduled) = state.withLock { ($0.runner, $0.last, $0.scheduled) }
        let server = serverLink?.current
        guard let runner else {
            var status = RigStatus(recording: nil, status: nil, stopping: false, last: last, server: server)
            status.scheduled = scheduled.map { .init(atNs: $0.start.atNs, captureId: $0.captureId) }
            status.clocks = clockHealth
            return status
        }
        var status = RigStatus(
            recording: runner.controller.value.directory, status: runner.status, stopping: runner.isStopping,
            last: nil, server: server)
        status.marks = runner.marks.count
        status.marksWarning = runner.controller.value.marksWarning
        status.clocks = clockHealth
        return status
    }

    /// Each captured stream's mapping of its device clock into RAW, as it stood within the last
    /// second: the recording's streams, or while idle those the live viewers opened; a stream
    /// stamped in RAW itself has none.
    public var clockHealth: [(id: String, health: ClockHealth)] {
        let boards = state.withLock { state in
            state.runner.map { runner in
                runner.controller.value.sources.compactMap { source in
                    source.clockHealth.map { (id: source.descriptor.id, board: $0) }
                }
            } ?? state.previewCapture?.clockBoards ?? []
        }
        return boards.compactMap { entry in entry.board.current.map { (entry.id, $0) } }
    }

    /// Takes a mark on the recording running (`RecordingController.mark`): the API's, a fleet's, a
    /// capture server's. Any thread.
    public func mark(_ request: MarkRequest) throws(MarkRefusal) -> (mark: Mark, warnings: [String]) {
        guard let runner = state.withLock({ $0.runner }) else {
            throw MarkRefusal(.conflict, "no recording is running: start one first (POST /api/v1/recording/start)")
        }
        return try runner.mark(request)
    }

    /// `mark` on a thread of its own: for async callers (the API, a fleet), whose threads must not
    /// wait for a mark's fsyncs on a slow disk.
    public func markOffThePool(_ request: MarkRequest) async -> Result<(mark: Mark, warnings: [String]), MarkRefusal> {
        await withCheckedContinuation { done in
            detachThread(named: "fc-mark") { [self] in
                done.resume(returning: Result { () throws(MarkRefusal) in try mark(request) })
            }
        }
    }

    /// The marks of the recording running, with its directory; nil when idle.
    public var marks: (directory: String, marks: [Mark])? {
        guard let runner = state.withLock({ $0.runner }), let directory = runner.controller.value.directory else {
            return nil
        }
        return (directory, runner.marks)
    }

    /// Starts a recording with the request's values over the service's; refuses a second one.
    public func start(_ request: StartRequest) async throws -> String {
        var overrides = base.overrides
        if let duration = request.duration { overrides.duration = duration }
        if let segment = request.segment { overrides.segment = segment }
        if let maxStorage = request.maxStorage { overrides.maxStorage = maxStorage }
        if let keep = request.keep { overrides.keep = keep }
        if let captureId = request.captureId { overrides.captureId = captureId }
        // An error about the request's own fields names them as the request does.
        if request.segment != nil || request.maxStorage != nil || request.keep != nil {
            overrides.names = RecordingSettings.Names(
                hostId: "--host-id", segment: "segment", maxStorage: "max_storage", keep: "keep")
        }
        let scheduled = request.startAtWallClockNs.map { ScheduledStart(atNs: $0) }
        let wantsCheck = request.checkSync ?? base.checkSyncByDefault
        let checker = wantsCheck ? base.syncChecker : nil
        if wantsCheck && checker == nil {
            throw Refusal(kind: .badRequest, description: "check_sync: this rig has no camera–IMU offset check")
        }
        let busy = state.withLock { state -> String? in
            // SIGTERM came: the recording is being finished and the process ends; a start now
            // (a fleet's, a capture server's, the API's) would be cut off unfinished.
            if state.shutDown { return "fieldcap is shutting down: no new recording" }
            if let pending = state.scheduled {
                return "a start is scheduled for \(SyncPoint.isoDatetime(wallClockNs: pending.start.atNs))"
                    + (pending.captureId.map { " (capture \($0))" } ?? "")
                    + ": call it off first (POST /api/v1/recording/stop)"
            }
            if state.runner != nil || state.starting {
                return "a recording is already running: stop it first (POST /api/v1/recording/stop)"
            }
            state.starting = true
            state.scheduled = scheduled.map { ($0, request.captureId) }
            return nil
        }
        if let busy { throw Refusal(kind: .conflict, description: busy) }
        defer {
            state.withLock { state in
                state.starting = false
                state.scheduled = nil
            }
            // A start that failed gives the cameras back to the preview (one that worked has
            // them until it stops).
            reopenPreviewIfWatched()
        }
        // What the recording pushes reaches the watchers after `started`, and not after the stop began.
        let gate = EventGate(hub: events)
        let controller: RecordingController
        do {
            let settings = try RecordingSettings.resolve(
                config: base.config, devices: base.devices, overrides: overrides)
            // The recording takes the cameras over from the preview, which then watches it.
            await onCameraQueue { [self] in closePreviewCapture() }
            let sources: [CaptureSource]
            do { sources = try settings.plan.makeSources(logger: logger) } catch {
                throw Refusal(kind: .unavailable, description: "\(error)")
            }
            var controllerSettings = try settings.controllerSettings(for: sources, directIO: base.directIO)
            controllerSettings.frameTaps = previews.taps(for: sources.map(\.descriptor))
            controllerSettings.sampleTaps = live.taps(for: sources.map(\.descriptor))
            controllerSettings.feedTaps = live.feedTaps(for: sources.map(\.descriptor))
            controllerSettings.startAt = scheduled
            controllerSettings.onEvent = { [gate] event in gate.send(event) }
            controller = RecordingController(sources: sources, settings: controllerSettings, logger: logger)
        } catch let error as PlanError {
            throw Refusal(kind: .badRequest, description: error.message)
        }
        let runner = RecordingRunner(controller: controller, events: events, gate: gate)
        let directory: String
        do { directory = try await runner.start() } catch RecordingController.StartError.cancelled(let atNs) {
            throw Refusal(
                kind: .conflict, description: RecordingController.StartError.cancelled(atNs: atNs).description)
        } catch {
            throw Refusal(kind: .unavailable, description: "\(error)")
        }
        state.withLock { $0.runner = runner }
        events.send(.started(directory: directory))
        gate.open()
        Task { [self] in
            let stopped = await runner.finished()
            state.withLock { state in
                if state.runner === runner { state.runner = nil }
                state.last = stopped
            }
            reopenPreviewIfWatched()
            if let checker { checkSync(after: stopped, with: checker) }
        }
        return directory
    }

    /// After a recording, or a start that failed: the preview gets the cameras back if anyone
    /// watches.
    private func reopenPreviewIfWatched() {
        cameraQueue.async { [self] in openPreviewCapture() }
    }

    /// Stops the recording (`why` becomes its stop reason) and waits until every file is finished.
    public func stop(_ why: String) async throws -> StoppedEvent {
        let (current, scheduled) = state.withLock { ($0.runner, $0.scheduled) }
        var running = current
        if running == nil, let scheduled {
            let calledOff = await callOff(scheduled.start, why)
            // The instant can come as the stop does: then the recording runs, and is stopped.
            running = state.withLock { $0.runner }
            if running == nil { return calledOff }
        }
        guard let runner = running else {
            throw Refusal(
                kind: .conflict, description: "no recording is running: start one first (POST /api/v1/recording/start)")
        }
        let stopped = await runner.stop(why)
        state.withLock { state in
            if state.runner === runner { state.runner = nil }
            state.last = stopped
        }
        return stopped
    }

    /// Calls off a start waiting for its instant, and waits until `start` has taken back what it
    /// made (its wait looks every 50 ms).
    private func callOff(_ scheduled: ScheduledStart, _ why: String) async -> StoppedEvent {
        scheduled.cancel()
        while state.withLock({ $0.scheduled?.start === scheduled }) {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        let stopped = StoppedEvent(
            calledOff: scheduled.atNs,
            why: RecordingController.StartError.cancelled(atNs: scheduled.atNs).description + " (\(why))")
        state.withLock { $0.last = stopped }
        return stopped
    }

    /// Stops a recording in progress, if there is one: the service's shutdown.
    /// Returns how the recording in progress ended, nil when there was none.
    @discardableResult
    public func shutdown(_ why: String) async -> StoppedEvent? {
        state.withLock { $0.shutDown = true }
        // No check begins now: the process is about to end (each is told as not done).
        syncChecks.close()
        await onCameraQueue { [self] in closePreviewCapture() }
        // A start opening its devices as the signal came holds no runner yet, and stop would find
        // nothing to stop: let it finish (10 s at most), then stop what it started.
        for _ in 0..<1_000 where state.withLock({ $0.starting && $0.scheduled == nil }) {
            try? await Task.sleep(nanoseconds: 10_000_000)
        }
        let stopped = try? await stop(why)
        previews.close()
        live.close()
        return stopped
    }
}
