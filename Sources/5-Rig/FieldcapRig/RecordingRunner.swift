import Dispatch
import FieldcapCore
import FieldcapSession
import FieldcapSystem
import SyncField
import Synchronization

/// One recording of the service, driven on a thread of its own as `fieldcap record` drives one
/// from its main thread: `RecordingController` wants one thread for `start`, `checkStop`,
/// `statistics` and `stop`, and its `start` and `stop` block (devices, files), which the
/// server's async tasks must not. Once a second it samples the status and tells `events` what
/// changed (each watcher gets the status itself, once a second).
final class RecordingRunner: Sendable {
    let controller: Controller
    let minFree: UInt64
    private let events: EventHub
    private let state = Mutex<State>(State())
    private let wake = DispatchSemaphore(value: 0)

    /// The controller, handed between the thread that starts the runner and its own.
    final class Controller: @unchecked Sendable {
        let value: RecordingController
        init(_ value: RecordingController) { self.value = value }
    }

    struct State {
        var stopRequest: String?
        var status: RecordingStatus?
        var outcome: StoppedEvent?
        var waiters: [CheckedContinuation<StoppedEvent, Never>] = []
        var stopping = false
    }

    /// How long a stop may run on a disk that stopped answering (`StopWatchdog`).
    let stopLimitSeconds: Double

    init(
        controller: RecordingController, events: EventHub,
        stopLimitSeconds: Double = StopWatchdog.defaultLimitSeconds
    ) {
        self.controller = Controller(controller)
        self.stopLimitSeconds = stopLimitSeconds
        minFree = controller.settings.minFree.bytes
        self.events = events
    }

    /// Starts the recording on its thread; returns once capture runs, or throws what `start` threw.
    func start() async throws -> String {
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<String, Error>) in
            detachThread(named: "fc-service-rec") { [self] in
                do {
                    try controller.value.start()
                } catch {
                    started.resume(throwing: error)
                    return
                }
                started.resume(returning: controller.value.directory ?? "")
                drive()
            }
        }
    }

    /// The latest status (at most a second old), nil before the first.
    var status: RecordingStatus? { state.withLock { $0.status } }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Asks the recording to stop (`why` becomes the sidecar's stop reason) and waits until it has.
    func stop(_ why: String) async -> StoppedEvent {
        state.withLock { if $0.stopRequest == nil { $0.stopRequest = why } }
        wake.signal()
        return await finished()
    }

    /// Waits until the recording has stopped, however it stopped.
    func finished() async -> StoppedEvent {
        await withCheckedContinuation { waiter in
            let done: StoppedEvent? = state.withLock { state in
                if let outcome = state.outcome { return outcome }
                state.waiters.append(waiter)
                return nil
            }
            if let done { waiter.resume(returning: done) }
        }
    }

    private func drive() {
        let controller = controller.value
        let meter = RecordingStatusMeter(controller: controller)
        let directory = controller.directory ?? ""
        var endedSeen: Set<String> = []
        var segments = controller.segments?.openSegmentDirectories ?? []
        var diskLowSaid = false
        var nextStatus = 0.0
        var reason: RecordingController.StopReason
        while true {
            if let stop = controller.checkStop() {
                reason = stop
                break
            }
            if let requested = state.withLock({ $0.stopRequest }) {
                reason = .requested(requested)
                break
            }
            _ = wake.wait(timeout: .now() + min(0.25, max(0.001, controller.remaining)))
            for ended in controller.streamsEndedEarly where endedSeen.insert(ended.id).inserted {
                events.send(.streamEnded(stream: ended.id, error: ended.error))
            }
            if let open = controller.segments?.openSegmentDirectories, let newest = open.last,
                !segments.contains(newest)
            {
                events.send(.segmentRotated(segment: PathName.base(of: newest)))
                segments = open
            }
            guard controller.elapsed >= nextStatus else { continue }
            nextStatus = controller.elapsed.rounded(.down) + 1
            let status = meter.sample(controller.statistics, elapsed: controller.elapsed)
            state.withLock { $0.status = status }
            // Twice the minimum: time to hear about it before the recording stops by itself.
            if let free = status.diskFree, free < 2 * minFree, !diskLowSaid {
                diskLowSaid = true
                events.send(.diskLow(freeBytes: free, minFreeBytes: minFree))
            }
        }
        state.withLock { $0.stopping = true }
        // A stop on a disk that stopped answering is given up, as `fieldcap record` gives it up:
        // the service answers, says why, and can be stopped; this thread waits on in the kernel.
        let watchdog = StopWatchdog(
            diskStalls: controller.diskStalls, writeFailed: reason == .writeFailed, limitSeconds: stopLimitSeconds
        ) {
            [self] why in
            settle(StoppedEvent(directory: directory, gaveUp: why))
        }
        let outcome = StoppedEvent(directory: directory, outcome: Result { try controller.stop(reason: reason) })
        watchdog.finished()
        settle(outcome)
    }

    /// The recording's end, told once: the stop's outcome, or the watchdog's giving up if that
    /// came first.
    private func settle(_ outcome: StoppedEvent) {
        let waiters: [CheckedContinuation<StoppedEvent, Never>]? = state.withLock { state in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return }
        events.send(.stopped(outcome))
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
