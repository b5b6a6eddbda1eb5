import ArgumentParser
import FieldcapCore
import FieldcapRig
import FieldcapSession
import FieldcapSystem

/// `fieldcap mark`: a mark on the recording running on this rig, from a shell, a script, a
/// button's handler.
struct MarkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mark",
        abstract: "Mark a moment on the running recording: its window is kept longest by the storage budget.",
        usage: "fieldcap mark [ROOT] LABEL [--note TEXT] [--before DURATION] [--after DURATION]",
        discussion: """
            A mark is an instant (now), a label, an optional note and a window before and \
            after it (the recording's defaults: 30 s each, or the config's mark_before and \
            mark_after). It goes into the recording's index (recording.json, marks) and into \
            events.ndjson of the segment it falls in. The storage budget deletes segments no \
            mark's window touches first; when the marked windows alone outgrow it, the \
            oldest mark is given up first, and that is said as it happens.

              fieldcap mark near-miss
              fieldcap mark /data/sessions grasp-failed --note "cup slipped" --before 60s --after 10s

            ROOT is the sessions root the recording writes into (./sessions by default, as \
            --root), or the recording's own directory; every recording running there is \
            marked (fieldcap record and fieldcap serve alike). Later: fieldcap extract \
            --mark LABEL|ID writes the window as a session of its own; fieldcap sessions \
            lists the marks.

            Exit status: 0 when every recording took the mark, 1 when one refused it (the \
            reason is printed), 69 when no recording is running there, 64 for a usage error.
            """)

    @Argument(
        help: ArgumentHelp("The sessions root, or the recording's directory (default ./sessions).", valueName: "ROOT"))
    var first: String

    @Argument(help: ArgumentHelp("What happened: one line of text (with ROOT given first).", valueName: "LABEL"))
    var second: String?

    @Option(help: ArgumentHelp("A note kept with the mark.", valueName: "TEXT"))
    var note: String?

    @Option(
        help: ArgumentHelp("How much before the instant to keep (default: the recording's).", valueName: "DURATION"),
        transform: MarkCommand.window)
    var before: Double?

    @Option(
        help: ArgumentHelp("How much after the instant to keep (default: the recording's).", valueName: "DURATION"),
        transform: MarkCommand.window)
    var after: Double?

    /// A window's seconds: `0`, or a duration (`30s`, `2m`, `1h`) of at most a day.
    static func window(_ text: String) throws -> Double {
        if ["0", "0s", "0ms", "0m", "0h"].contains(text) { return 0 }
        guard let span = TimeSpan(text, maximumSeconds: MarkRequest.maxWindowSeconds) else {
            throw ValidationError("'\(text)' is not a window: give 0 or a duration up to a day (30s, 2m, 1h)")
        }
        return span.seconds
    }

    var root: String { second == nil ? "sessions" : first }
    var label: String { second ?? first }

    var request: MarkRequest {
        MarkRequest(
            label: label, note: note, source: "command", beforeSeconds: before, afterSeconds: after)
    }

    func validate() throws {
        do { try request.validate() } catch { throw ValidationError(error.message) }
    }

    func run() throws {
        let recordings = MarkClient.recordings(at: root)
        guard !recordings.isEmpty else {
            say(
                "Error: no recording is running in \(root.printable) (fieldcap record or serve, recording there): "
                    + "start one, or name its sessions root or directory")
            throw ExitCode(69)
        }
        var refused = false
        for recording in recordings {
            let directory = recording.directory
            switch MarkClient.send(request, to: recording) {
            case .failure(let failure):
                say("Error: \(failure.message)")
                refused = true
            case .success(let answer):
                if let mark = answer.mark {
                    print(
                        "marked \(mark.id) \"\(mark.label.printable)\" at \(mark.utc) in \(directory.printable): "
                            + "window \(Self.seconds(mark.beforeSeconds)) before, \(Self.seconds(mark.afterSeconds)) after"
                    )
                    for warning in answer.warnings ?? [] { say("warning: \(warning)") }
                } else {
                    say("Error: \(directory.printable): \(answer.error ?? "the recording refused the mark")")
                    refused = true
                }
            }
        }
        if refused { throw ExitCode(1) }
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}
