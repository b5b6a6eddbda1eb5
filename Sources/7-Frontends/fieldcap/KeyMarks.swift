import FieldcapCore
import FieldcapRig
import FieldcapSession
import FieldcapSystem

/// `fieldcap record` on a terminal: the `m` key marks the moment (label `key`, source `key`), as
/// `fieldcap mark key` would. The terminal gets its mode back at the end. Only while the
/// recording is the terminal's foreground job: one started with `&` leaves the terminal alone
/// (changing it, or reading it, from the background would stop the whole process).
final class KeyMarks {
    private let keys: TerminalKeys
    private var thread: DedicatedThread?
    private let stopRequested = StopSignal()

    /// Nil when standard input is not a terminal, or the recording runs in the background.
    init?(runner: RecordingRunner) {
        guard let keys = TerminalKeys() else { return nil }
        self.keys = keys
        say("press m to mark this moment (or run: fieldcap mark LABEL)")
        thread = DedicatedThread(name: "fc-keys") { [keys, stopRequested] in
            while !runner.isStopping && !stopRequested.isRequested {
                guard let key = keys.read(timeoutMs: 200), key == UInt8(ascii: "m") || key == UInt8(ascii: "M")
                else { continue }
                do throws(MarkRefusal) {
                    // The recording's logger says the mark and its warnings.
                    _ = try runner.mark(MarkRequest(label: "key", source: "key"))
                } catch {
                    say("\r\u{1B}[Kmark not taken: \(error.message)")
                }
            }
        }
    }

    /// As the stop begins: no more keys. Returns at once (a mark in flight may be held by the disk).
    func requestStop() { stopRequested.request() }

    /// Once the recording has stopped: the thread ends, the terminal is as it was.
    func finish() {
        requestStop()
        thread?.join()
        thread = nil
        keys.restore()
    }

    /// The terminal as it was, without waiting for the thread: before the process gives up a stop
    /// the disk holds, and ends.
    func restoreTerminal() { keys.restore() }
}
