import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import Synchronization

/// What the rig tells its watchers (`EventHub.watch`, `/api/v1/events`): what happens, as it
/// happens. `status` is not sent here: a watcher that wants the status once a second reads
/// `RigService.status` (the events WebSocket sends it so).
public enum RigEvent: Sendable {
    case started(directory: String)
    case stopped(StoppedEvent)
    case status(RigStatus)
    /// A stream's capture ended early (a camera unplugged); the others go on.
    case streamEnded(stream: String, error: String)
    /// A stream's device went away (unplugged): the stream waits for the same device.
    case streamAway(stream: String, reason: String)
    /// A stream's device came back, as `node`, after `awaySeconds`: the stream goes on.
    case streamReturned(stream: String, node: String, awaySeconds: Double)
    /// The disk's free space fell below twice the minimum: the recording stops by itself at the minimum.
    case diskLow(freeBytes: UInt64, minFreeBytes: UInt64)
    /// A segmented recording finished a segment (it is in the recording's index) and writes the
    /// next, `segment`.
    case segmentRotated(segment: String)
    /// The cameras could not be opened for a preview while no recording runs (another program
    /// has them, one was unplugged).
    case previewUnavailable(error: String)
    /// The camera–IMU offset check after a recording (`StartRequest.checkSync`) finished.
    case syncChecked(SyncCheckedEvent)
    /// A mark was taken on the recording; `warnings`: the budget cannot keep every marked window.
    case marked(Mark, warnings: [String])
    /// The storage budget gave up a mark and deleted its segments.
    case markGivenUp(Mark, reason: String)
}

extension RigEvent {
    /// What the recording pushed, as the rig tells it.
    init(_ event: RecordingController.Event) {
        switch event {
        case .streamEnded(let stream, let error): self = .streamEnded(stream: stream, error: error)
        case .streamAway(let stream, let reason): self = .streamAway(stream: stream, reason: reason)
        case .streamReturned(let stream, let node, let seconds):
            self = .streamReturned(stream: stream, node: node, awaySeconds: seconds)
        case .segmentRotated(let segment): self = .segmentRotated(segment: segment)
        case .diskLow(let free, let minFree): self = .diskLow(freeBytes: free, minFreeBytes: minFree)
        case .marked(let mark, let warnings): self = .marked(mark, warnings: warnings)
        case .markGivenUp(let mark, let reason): self = .markGivenUp(mark, reason: reason)
        }
    }
}

/// A recording's pushed events (`RecordingController.Settings.onEvent`) on their way to the
/// watchers, told only while the recording runs: those that come before `started` is sent (a
/// disk already low at start, a stream that failed as capture began) wait for it, and those that
/// come once the stop began are dropped (`stopped` tells the end). Thread-safe.
public final class EventGate: Sendable {
    private struct State {
        var open = false
        var closed = false
        var held: [RigEvent] = []
    }
    private let hub: EventHub
    private let state = Mutex<State>(State())

    public init(hub: EventHub) { self.hub = hub }

    /// From any thread.
    public func send(_ event: RecordingController.Event) {
        let event = RigEvent(event)
        let now: Bool = state.withLock { state in
            if !state.closed && !state.open { state.held.append(event) }
            return state.open && !state.closed
        }
        if now { hub.send(event) }
    }

    /// Once `started` is sent: what waited goes out, in order, and the rest as it comes.
    public func open() {
        let held: [RigEvent] = state.withLock { state in
            defer { state.held = [] }
            state.open = true
            return state.closed ? [] : state.held
        }
        for event in held { hub.send(event) }
    }

    /// As the stop begins.
    public func close() { state.withLock { $0.closed = true } }
}

/// Hands every event to every watcher. A watcher that reads slower than events come loses the
/// oldest it has not read (status lines are replaced by newer ones anyway), so one stalled
/// browser tab never holds memory or the recording's thread.
public final class EventHub: Sendable {
    private let watchers = Mutex<[UUID: AsyncStream<RigEvent>.Continuation]>([:])

    public init() {}

    public func send(_ event: RigEvent) {
        for watcher in watchers.withLock({ Array($0.values) }) { watcher.yield(event) }
    }

    /// The events from now on, until the stream's reader goes away.
    public func watch() -> AsyncStream<RigEvent> {
        let id = UUID()
        let (stream, continuation) = AsyncStream<RigEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        continuation.onTermination = { [weak self] _ in _ = self?.watchers.withLock { $0.removeValue(forKey: id) } }
        watchers.withLock { $0[id] = continuation }
        return stream
    }

    var watcherCount: Int { watchers.withLock { $0.count } }
}

/// The service's state as `/api/v1/status` and the events' status show it.
public struct RigStatus: Sendable {
    /// The recording's directory, nil when idle.
    public var recording: String?
    public var status: RecordingStatus?
    public var stopping: Bool
    /// How the previous recording ended, while idle.
    public var last: StoppedEvent?
    /// The capture server connection (`serve --server`), if there is one.
    public var server: ServerLink.Snapshot?
    /// A start waiting for its instant (a fleet's), while idle.
    public var scheduled: Scheduled?
    /// The recording's marks so far, and what the user last had to hear about them (the budget
    /// cannot keep every marked window).
    public var marks = 0
    public var marksWarning: String?
    /// Each captured stream's device clock mapping (`RigService.clockHealth`).
    public var clocks: [(id: String, health: ClockHealth)] = []

    public struct Scheduled: Sendable {
        public var atNs: UInt64
        public var captureId: String?
    }

    public var state: String {
        guard recording != nil else { return scheduled == nil ? "idle" : "scheduled" }
        return stopping ? "stopping" : "recording"
    }
}

/// How a recording ended.
public struct StoppedEvent: Sendable {
    public var directory: String
    public var reason: String
    public var elapsed: Double
    public var streams: [Recorder.StreamSummary]
    /// The error that ended writing, or that `stop` threw.
    public var error: String?

    /// A scheduled start called off before its instant: nothing was recorded, no directory left.
    init(calledOff atNs: UInt64, why: String) {
        directory = ""
        reason = why
        elapsed = 0
        streams = []
    }

    /// The reason of a stop given up on a disk that stopped answering.
    public static let diskNotAnswering = "disk not answering"

    /// A stop given up on a disk that stopped answering (`StopWatchdog`): the session is left for
    /// `fieldcap recover`, and the stop's thread waits on in the kernel.
    init(directory: String, gaveUp why: String) {
        self.directory = directory
        reason = Self.diskNotAnswering
        elapsed = 0
        streams = []
        error = why
    }

    init(directory: String, outcome: Result<RecordingController.Outcome, Error>) {
        self.directory = directory
        switch outcome {
        case .success(let outcome):
            reason = outcome.reason.description
            elapsed = outcome.elapsed
            streams = outcome.summary
            error = outcome.writeFailure.map { "\($0)" }
        case .failure(let failure):
            reason = "failed"
            elapsed = 0
            streams = []
            error = "\(failure)"
        }
    }
}
