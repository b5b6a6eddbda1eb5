import CFieldcapLinux
import FieldcapSession
import FieldcapSystem
import Synchronization

/// The camera–IMU offset check, as a program hands it to the rig: `FieldcapSyncCheck` lives in a
/// later layer (it reads sessions as the exports do), so the rig asks through this, and every
/// front end's recording (the API's, a capture server's, a fleet's) can be checked alike.
public protocol SyncChecker: Sendable {
    /// Checks the recording in `directory` (a segmented one: its first finished segment) and puts
    /// the result into that session's `fieldcap.json`. Returns the session checked and the result.
    func checkAndSave(directory: String) throws -> (session: String, entry: SyncCheckEntry)
}

/// What the check after a recording found (`RigEvent.syncChecked`).
public struct SyncCheckedEvent: Sendable {
    /// The recording's directory, as `stopped` named it.
    public var directory: String
    /// The session checked: the directory, or a segmented recording's first segment.
    public var session: String?
    /// What was saved, or nil with `error` when the recording could not be checked.
    public var entry: SyncCheckEntry?
    public var error: String?
}

/// The checks after recordings, one at a time on a thread of their own at the lowest CPU
/// priority (nice 19), in the order the recordings stopped: many short recordings queue their
/// checks rather than each decoding video at once. Thread-safe.
final class SyncCheckQueue: Sendable {
    private struct State {
        var pending: [(directory: String, checker: any SyncChecker)] = []
        var running = false
        var closed = false
    }
    private let state = Mutex(State())
    private let events: EventHub

    init(events: EventHub) { self.events = events }

    /// Queues the check of `directory`; refused (told as not done) once the rig shuts down.
    func add(_ directory: String, _ checker: any SyncChecker) {
        let start: Bool? = state.withLock { state in
            guard !state.closed else { return nil }
            state.pending.append((directory, checker))
            defer { state.running = true }
            return !state.running
        }
        guard let start else {
            events.send(.syncChecked(SyncCheckedEvent(directory: directory, error: Self.shutDown(directory))))
            return
        }
        guard start else { return }
        detachThread(named: "fc-sync-check") { [self] in
            _ = CFieldcapLinux_nice_thread(19)
            while let (directory, checker) = next() {
                var event = SyncCheckedEvent(directory: directory)
                do {
                    let (session, entry) = try checker.checkAndSave(directory: directory)
                    event.session = session
                    event.entry = entry
                } catch {
                    event.error = "\(error)"
                }
                events.send(.syncChecked(event))
            }
        }
    }

    /// The rig shuts down: the checks not begun are told as not done (the one running, if any,
    /// is cut off with the process; its sidecar stays as it was, the rewrite being atomic).
    func close() {
        let dropped = state.withLock { state in
            state.closed = true
            defer { state.pending = [] }
            return state.pending.map(\.directory)
        }
        for directory in dropped {
            events.send(.syncChecked(SyncCheckedEvent(directory: directory, error: Self.shutDown(directory))))
        }
    }

    private func next() -> (String, any SyncChecker)? {
        state.withLock { state in
            guard !state.closed, !state.pending.isEmpty else {
                state.running = false
                return nil
            }
            return state.pending.removeFirst()
        }
    }

    static func shutDown(_ directory: String) -> String {
        "not checked: fieldcap was shutting down; run `fieldcap check-sync --save \(directory)`"
    }
}

extension RigService {
    /// Queues the check of the recording that `stopped` ended. Nothing is checked when nothing
    /// was recorded or the stop was given up (the session waits for `fieldcap recover`).
    func checkSync(after stopped: StoppedEvent, with checker: any SyncChecker) {
        guard !stopped.directory.isEmpty, stopped.reason != StoppedEvent.diskNotAnswering else { return }
        syncChecks.add(stopped.directory, checker)
    }
}
