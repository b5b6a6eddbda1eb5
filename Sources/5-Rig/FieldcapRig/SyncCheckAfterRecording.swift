import CFieldcapLinux
import FieldcapSession
import FieldcapSystem

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

extension RigService {
    /// Checks the recording that `stopped` ended, on a thread of its own at the lowest priority
    /// (nice 19: a recording started meanwhile is never slowed by it), and tells the watchers.
    /// Nothing is checked when nothing was recorded or the stop was given up (the session waits
    /// for `fieldcap recover`).
    func checkSync(after stopped: StoppedEvent, with checker: any SyncChecker) {
        guard !stopped.directory.isEmpty, stopped.reason != StoppedEvent.diskNotAnswering else { return }
        let directory = stopped.directory
        detachThread(named: "fc-sync-check") { [events] in
            _ = CFieldcapLinux_nice_thread(19)
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
