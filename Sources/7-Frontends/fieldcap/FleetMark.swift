import ArgumentParser
import FieldcapCore
import FieldcapFleet
import FieldcapSession
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap fleet mark`: one mark on every rig's recording, at one wall-clock instant.
struct FleetMark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mark",
        abstract: "Mark this instant on every rig's recording (`fieldcap mark`, fleet-wide).",
        discussion: """
            Each rig takes the mark at the same wall-clock instant, this one, through its own \
            clock (as a fleet start is taken), whatever the command's delay; its window is kept \
            longest by the rig's storage budget. The table shows each rig's mark id and \
            recording, or why it took none (not recording, a window its budget cannot hold).
            """)

    @OptionGroup var broker: FleetArguments

    @Argument(help: ArgumentHelp("What happened: one line of text.", valueName: "LABEL"))
    var label: String

    @Option(help: ArgumentHelp("A note kept with the mark.", valueName: "TEXT"))
    var note: String?

    @Option(
        help: ArgumentHelp("How much before the instant to keep (default: each rig's).", valueName: "DURATION"),
        transform: MarkCommand.window)
    var before: Double?

    @Option(
        help: ArgumentHelp("How much after the instant to keep (default: each rig's).", valueName: "DURATION"),
        transform: MarkCommand.window)
    var after: Double?

    func validate() throws {
        do {
            try MarkRequest(label: label, note: note, source: "fleet", beforeSeconds: before, afterSeconds: after)
                .validate()
        } catch { throw ValidationError(error.message) }
    }

    func run() throws {
        let controller = try broker.controller()
        // The instant is taken once connected: the rigs' marks fall at it however long the
        // connection took.
        let now = MonotonicClock.wallClockNs()
        let id =
            "mark-" + SyncPoint.isoDatetime(wallClockNs: now).prefix(23).filter { $0 != "-" && $0 != ":" }
            + "Z-\(getpid())"
        say("mark \"\(label)\" at \(SyncPoint.isoDatetime(wallClockNs: now)) (at_wall_clock_ns \(now); \(id))")
        var command = FleetCommand(command: .mark, captureId: id, atWallClockNs: now)
        command.label = label
        command.note = note
        command.before = before
        command.after = after
        try runFleetCommand(command, controller: controller, deadline: Date().addingTimeInterval(10))
    }
}
