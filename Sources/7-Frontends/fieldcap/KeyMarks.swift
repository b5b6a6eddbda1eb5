import FieldcapRig
import FieldcapSession
import FieldcapSystem

/// `fieldcap record` on a terminal: the `m` key marks the moment (label `key`, source `key`), as
/// `fieldcap mark key` would. The terminal gets its mode back at the end.
final class KeyMarks {
    private let keys: TerminalKeys
    private var thread: DedicatedThread?

    /// Nil when standard input is not a terminal.
    init?(runner: RecordingRunner) {
        guard let keys = TerminalKeys() else { return nil }
        self.keys = keys
        say("press m to mark this moment (or run: fieldcap mark LABEL)")
        thread = DedicatedThread(name: "fc-keys") { [keys] in
            while !runner.isStopping {
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

    /// Once the recording stops: the thread ends, the terminal is as it was.
    func finish() {
        thread?.join()
        thread = nil
        keys.restore()
    }
}
