import Dispatch
import FieldcapCore
import FieldcapGPIO
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import SyncField
import Synchronization

/// One recording, driven on a thread of its own: the one loop every front end's recording goes
/// through (`fieldcap record`, and `serve`'s API, capture-server client and fleet through
/// `RigService`). `RecordingController` wants one thread for `start`, `checkStop`, `statistics`
/// and `stop`, and its `start` and `stop` block (devices, files), which neither a server's async
/// tasks nor a terminal's signal handling may.
///
/// The runner tells `events` how the recording stopped (`stopped`). What happens while it records
/// (a stream that ended, a segment rotated, a low disk) is pushed by the controller itself, from
/// the thread it happens on, to whoever made it with `RecordingController.Settings.onEvent`:
/// `RigService` sends it through an `EventGate`, which the runner closes as the stop begins. The
/// loop only samples the status and waits for the stop: the recording's own end (`checkStop`:
/// its duration, a failed write, the free space), or a request. A stop the disk holds is given up
/// (`StopWatchdog`), so the front end can answer and end.
///
/// Thread-safe.
public final class RecordingRunner: Sendable {
    public struct Options: Sendable {
        /// Seconds between two status samples (`status`, `Hooks.status`).
        public var statusEvery = 1.0
        /// Seconds into the recording of the first sample: 0 for a status at once (a service's),
        /// `statusEvery` for a first rate measured over a whole interval (a status line's).
        public var firstStatusAt = 0.0
        /// How long a stop may run on a disk that stopped answering (`StopWatchdog`).
        public var stopLimitSeconds = StopWatchdog.defaultLimitSeconds

        public init(
            statusEvery: Double = 1, firstStatusAt: Double = 0,
            stopLimitSeconds: Double = StopWatchdog.defaultLimitSeconds
        ) {
            self.statusEvery = statusEvery
            self.firstStatusAt = firstStatusAt
            self.stopLimitSeconds = stopLimitSeconds
        }
    }

    /// What a front end does on the runner's thread, in this order: the controller's
    /// `beforeCapture` (the sources' reports), once capture runs, each status sample, and as the
    /// stop begins. A terminal's status line lives here: it needs no lock, being on one thread.
    public struct Hooks: @unchecked Sendable {
        public var beforeCapture: (SessionLayout) throws -> Void
        public var started: () -> Void
        public var status: (RecordingStatus) -> Void
        public var stopping: (RecordingController.StopReason) -> Void

        public init(
            beforeCapture: @escaping (SessionLayout) throws -> Void = { _ in }, started: @escaping () -> Void = {},
            status: @escaping (RecordingStatus) -> Void = { _ in },
            stopping: @escaping (RecordingController.StopReason) -> Void = { _ in }
        ) {
            self.beforeCapture = beforeCapture
            self.started = started
            self.status = status
            self.stopping = stopping
        }
    }

    /// How the recording ended.
    public enum End: @unchecked Sendable {
        /// `stop` returned: the outcome (its reason, each stream's summary, a write that failed),
        /// or the error it threw.
        case stopped(Result<RecordingController.Outcome, Error>)
        /// The stop was given up on a disk that stopped answering: why, naming `fieldcap recover`.
        /// The stop's thread waits on in the kernel.
        case gaveUp(String)
    }

    /// The controller, handed between the thread that starts the runner and its own.
    final class Controller: @unchecked Sendable {
        let value: RecordingController
        init(_ value: RecordingController) { self.value = value }
    }

    struct State {
        var stopRequest: String?
        var status: RecordingStatus?
        var end: End?
        var stopped: StoppedEvent?
        var waiters: [CheckedContinuation<StoppedEvent, Never>] = []
        var stopping = false
        /// Why `fieldcap mark` cannot reach the recording, if its socket could not be made.
        var marksProblem: String?
    }

    let controller: Controller
    public let options: Options
    private let events: EventHub
    private let gate: EventGate?
    private let state = Mutex<State>(State())
    private let wake = DispatchSemaphore(value: 0)
    /// Opened once the end is known, for the blocking `waitForEnd`.
    private let ended = Latch()

    /// `gate`: the recording's pushed events on their way to `events`, closed here as the stop
    /// begins (what the stop itself does is told by `stopped`).
    public init(
        controller: RecordingController, events: EventHub, gate: EventGate? = nil, options: Options = Options()
    ) {
        self.controller = Controller(controller)
        self.options = options
        self.events = events
        self.gate = gate
    }

    /// Starts the recording on its thread and returns its directory once capture runs, or throws
    /// what `RecordingController.start` threw. Blocks the calling thread.
    public func start(hooks: Hooks = Hooks()) throws -> String {
        let started = DispatchSemaphore(value: 0)
        let result = Mutex<Result<String, Error>?>(nil)
        begin(hooks) { outcome in
            result.withLock { $0 = outcome }
            started.signal()
        }
        started.wait()
        return try result.withLock { $0! }.get()
    }

    /// `start` for async callers: nothing waits but the recording's own thread, which may open
    /// devices or wait for a fleet's instant for a while.
    public func start(hooks: Hooks = Hooks()) async throws -> String {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<String, Error>) in
            begin(hooks) { done.resume(with: $0) }
        }
    }

    /// Starts the recording's thread, which tells `started` how the start went, then drives.
    private func begin(_ hooks: Hooks, started: @escaping @Sendable (Result<String, Error>) -> Void) {
        detachThread(named: "fc-recording") { [self] in
            do {
                try controller.value.start(beforeCapture: hooks.beforeCapture)
            } catch {
                started(.failure(error))
                return
            }
            let listener = listenForMarks()
            let lines = watchMarkLines()
            hooks.started()
            started(.success(controller.value.directory ?? ""))
            drive(hooks, listener: listener, lines: lines)
        }
    }

    /// The recording's marks socket (`MarkListener`); nil when it could not be
    /// made (`marksProblem` says why).
    private func listenForMarks() -> MarkListener? {
        guard let directory = controller.value.directory else { return nil }
        switch MarkListener.open(
            directory: directory,
            mark: { [self] request in
                Result { () throws(MarkRefusal) in try mark(request) }
            })
        {
        case .success(let listener): return listener
        case .failure(let error):
            state.withLock { $0.marksProblem = error.description }
            return nil
        }
    }

    /// Why marks did not reach this recording, if something kept them: its marks socket could not
    /// be made, a GPIO line could not be watched, or lost edges.
    public var marksProblem: String? { state.withLock { $0.marksProblem } }

    /// The GPIO lines whose rising edges mark the recording (`--mark-gpio`), watched from now
    /// until the stop begins: each edge a mark at the kernel's time of the edge.
    private func watchMarkLines() -> [GPIOEdgeWatcher] {
        controller.value.settings.markLines.compactMap { spec in
            let watcher: GPIOEdgeWatcher
            do throws(GPIOError) { watcher = try GPIOEdgeWatcher(spec) } catch {
                state.withLock { $0.marksProblem = error.message }
                return nil
            }
            watcher.start { [self] edge in
                var request = MarkRequest(
                    label: spec.label, source: spec.source, beforeSeconds: spec.beforeSeconds,
                    afterSeconds: spec.afterSeconds)
                request.atMonotonicRawNs = edge.rawNs
                request.uncertaintyNs = edge.uncertaintyNs
                if edge.dropped > 0 {
                    let problem = "\(spec.source): \(edge.dropped) edges lost (the kernel's buffer was full)"
                    state.withLock { $0.marksProblem = problem }
                    controller.value.warn(problem)
                }
                do throws(MarkRefusal) { _ = try mark(request) } catch {
                    let problem = "\(spec.source): an edge not marked: \(error.message)"
                    state.withLock { $0.marksProblem = problem }
                    controller.value.warn(problem)
                }
            }
            return watcher
        }
    }

    /// Takes a mark on the recording (`RecordingController.mark`). Any thread.
    public func mark(_ request: MarkRequest) throws(MarkRefusal) -> (mark: Mark, warnings: [String]) {
        if isStopping { throw MarkRefusal(.conflict, "the recording is stopping: no more marks") }
        return try controller.value.mark(request)
    }

    /// The recording's marks so far.
    public var marks: [Mark] { controller.value.marks }

    /// The latest status (at most `statusEvery` old), nil before the first.
    public var status: RecordingStatus? { state.withLock { $0.status } }

    /// Whether the stop has begun (asked for, or the recording's own).
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Asks the recording to stop (`why` becomes the sidecar's stop reason); returns at once.
    /// A second request changes nothing.
    public func requestStop(_ why: String) {
        state.withLock { if $0.stopRequest == nil { $0.stopRequest = why } }
        wake.signal()
    }

    /// Waits until the recording has ended, however it ended. Blocks the calling thread.
    public func waitForEnd() -> End {
        while !ended.wait(milliseconds: 60_000) {}
        return state.withLock { $0.end! }
    }

    /// Asks the recording to stop and waits until it has.
    public func stop(_ why: String) async -> StoppedEvent {
        requestStop(why)
        return await finished()
    }

    /// Waits until the recording has stopped, however it stopped.
    public func finished() async -> StoppedEvent {
        await withCheckedContinuation { waiter in
            let done: StoppedEvent? = state.withLock { state in
                if let stopped = state.stopped { return stopped }
                state.waiters.append(waiter)
                return nil
            }
            if let done { waiter.resume(returning: done) }
        }
    }

    private func drive(_ hooks: Hooks, listener: MarkListener?, lines: [GPIOEdgeWatcher]) {
        let controller = controller.value
        let meter = RecordingStatusMeter(controller: controller)
        let directory = controller.directory ?? ""
        let every = max(0.01, options.statusEvery)
        var nextStatus = options.firstStatusAt
        var reason: RecordingController.StopReason
        while true {
            // A sample when one is due, and one as the duration ends: the last status line shows
            // the whole recording.
            let elapsed = controller.elapsed
            if elapsed >= nextStatus || controller.remaining <= 0 {
                nextStatus = ((elapsed / every).rounded(.down) + 1) * every
                let status = meter.sample(controller.statistics, elapsed: elapsed)
                state.withLock { $0.status = status }
                hooks.status(status)
            }
            if let stop = controller.checkStop() {
                reason = stop
                break
            }
            if let requested = state.withLock({ $0.stopRequest }) {
                reason = .requested(requested)
                break
            }
            // The recording's own stops (a failed write or rotation, the free space) are looked
            // at four times a second; a request wakes the loop at once.
            let wait = min(nextStatus - controller.elapsed, controller.remaining, 0.25)
            _ = wake.wait(timeout: .now() + max(0.001, wait))
        }
        // The lines' last edges are marked before marks are refused for the stop, if their threads
        // answer within a second: a thread held by a disk that stopped answering must not hold the
        // stop (the watchdog below is what ends a recording on such a disk). They, and the marks
        // socket's, are joined once the stop is done.
        for line in lines { line.requestStop() }
        for line in lines { _ = line.waitUntilStopped(milliseconds: 1_000) }
        state.withLock { $0.stopping = true }
        listener?.requestStop()
        gate?.close()
        hooks.stopping(reason)
        // A stop on a disk that stopped answering is given up: the front end answers, says why,
        // and can end; this thread waits on in the kernel.
        let watchdog = StopWatchdog(
            diskStalls: controller.diskStalls, writeFailed: reason == .writeFailed,
            limitSeconds: options.stopLimitSeconds
        ) {
            [self] why in
            settle(.gaveUp(why), directory: directory)
        }
        let outcome = Result { try controller.stop(reason: reason) }
        watchdog.finished()
        for line in lines { line.stop() }
        listener?.close()
        settle(.stopped(outcome), directory: directory)
    }

    /// The recording's end, told once: the stop's outcome, or the watchdog's giving up if that
    /// came first.
    private func settle(_ end: End, directory: String) {
        let stopped =
            switch end {
            case .gaveUp(let why): StoppedEvent(directory: directory, gaveUp: why)
            case .stopped(let outcome): StoppedEvent(directory: directory, outcome: outcome)
            }
        let waiters: [CheckedContinuation<StoppedEvent, Never>]? = state.withLock { state in
            guard state.end == nil else { return nil }
            state.end = end
            state.stopped = stopped
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        ended.open()
        events.send(.stopped(stopped))
        for waiter in waiters { waiter.resume(returning: stopped) }
    }
}
