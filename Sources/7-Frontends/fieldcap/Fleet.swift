import ArgumentParser
import FieldcapCore
import FieldcapFleet
import FieldcapSession
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap fleet start|stop|status`: the rigs of a fleet (`fieldcap serve --mqtt`), as one.
struct Fleet: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start, stop and mark every rig of a fleet at one instant, and show them as one table (MQTT).",
        discussion: """
            The rigs are `fieldcap serve --mqtt mqtt://BROKER:1883 --fleet NAME` processes. \
            `fleet start` sends one start to all of them: a capture id (--capture-id, or one \
            made from the time) and an instant --in the future (2s), at which each rig takes its \
            sync point by its own wall clock. It waits for every online rig's answer and prints \
            them: started (with how late its sync point was against the instant), missed (the \
            command came after the instant: that rig stays out, the others go on), failed. \
            `fleet stop` stops the rigs recording that capture the same way; `fleet mark LABEL` \
            marks one instant on every rig's recording (`fieldcap mark --help`); `fleet status` \
            prints each rig's presence and status. Any MQTT client can send the same commands \
            (a start with "at_wall_clock_ns"; a stop without it stops at once):

              mosquitto_pub -h BROKER -t fieldcap/fleet/NAME/command -q 1 -m \\
                '{"command":"stop","capture_id":"lab-0412"}'

            Then `fieldcap request --capture-id ID` gathers the rigs' sessions of the capture \
            into one multi-host request.

            Exit status: 0 when every online rig answered as asked; 3 when one missed, failed \
            or did not answer; 1 when the broker cannot be reached; 64 for a usage error.
            """,
        subcommands: [FleetStart.self, FleetStop.self, FleetMark.self, FleetStatusCommand.self])
}

/// What the fleet subcommands share: connecting and waiting for the retained state.
extension FleetArguments {
    func controller() throws -> FleetController {
        guard mqtt != nil else { throw ValidationError("--mqtt is required: the fleet's broker, mqtt://HOST[:PORT]") }
        do {
            let controller = try FleetController(
                options: try options(clientId: "fieldcap-fleet-\(getpid())")!, fleet: fleet)
            try controller.connect()
            // The retained presences and statuses come right after the subscriptions.
            usleep(700_000)
            return controller
        } catch {
            say("Error: --mqtt \(mqtt ?? ""): \(error)")
            throw ExitCode(1)
        }
    }
}

/// Sends `command` and waits for each online rig's reply (until `deadline`); prints the table.
func runFleetCommand(_ command: FleetCommand, controller: FleetController, deadline: Date) throws {
    let online = controller.rigs.filter { $0.presence?.state == "online" }.map(\.host)
    if online.isEmpty { say("warning: no rig of fleet \(controller.topics.fleet) is online") }
    try controller.send(command)
    while Date() < deadline {
        // A rig may answer the capture's other command meanwhile (a start it calls off for this stop).
        let answered = Set(
            controller.replies.filter { $0.captureId == command.captureId && $0.command == command.command }.map(\.host)
        )
        if !online.isEmpty && Set(online).isSubset(of: answered) { break }
        usleep(50_000)
    }
    let replies = controller.replies.filter { $0.captureId == command.captureId && $0.command == command.command }
    var rows = [["rig", "result", "late by", "session or why"]]
    var allWell = !online.isEmpty
    for host in Set(online).union(replies.map(\.host)).sorted() {
        guard let reply = replies.last(where: { $0.host == host }) else {
            rows.append([host, "no answer", "", ""])
            allWell = false
            continue
        }
        let late = reply.lateByNs.map { cFormat("%.3f ms", Double($0) / 1e6) } ?? ""
        let what =
            reply.result == .marked
            ? "\(reply.detail ?? "") in \(reply.session ?? "")" : reply.session ?? reply.detail ?? ""
        rows.append([host, reply.result.rawValue, late, what])
        let wanted: FleetReply.Result =
            switch command.command {
            case .start: .started
            case .stop: .stopped
            case .mark: .marked
            }
        if reply.result != wanted { allWell = false }
    }
    print(FleetTable.render(rows))
    controller.close()
    if !allWell { throw ExitCode(3) }
}

struct FleetStart: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "start", abstract: "Start every rig of the fleet at one shared instant.")

    @OptionGroup var broker: FleetArguments

    @Option(help: ArgumentHelp("The capture's id, in every rig's sidecar (default: capture-UTCTIME).", valueName: "ID"))
    var captureId: String?

    @Option(
        name: .customLong("in"),
        help: ArgumentHelp(
            "How far ahead the shared instant is: enough for the command to reach every rig.",
            valueName: "DURATION"))
    var lead: Duration = TimeSpan(seconds: 2)

    func validate() throws {
        if let captureId, let problem = StreamID.problem(with: captureId) {
            throw ValidationError("--capture-id '\(captureId)' cannot be used: \(problem)")
        }
    }

    func run() throws {
        let now = MonotonicClock.wallClockNs()
        let id =
            captureId ?? "capture-"
            + SyncPoint.isoDatetime(wallClockNs: now).prefix(19).filter { $0 != "-" && $0 != ":" } + "Z"
        let at = now + lead.nanoseconds
        let controller = try broker.controller()
        say("capture \(id): starting at \(SyncPoint.isoDatetime(wallClockNs: at)) (at_wall_clock_ns \(at))")
        try runFleetCommand(
            FleetCommand(command: .start, captureId: id, atWallClockNs: at), controller: controller,
            deadline: Date().addingTimeInterval(lead.seconds + 15))
    }
}

struct FleetStop: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stop", abstract: "Stop the rigs recording a capture, at one shared instant.")

    @OptionGroup var broker: FleetArguments

    @Option(help: ArgumentHelp("The capture to stop (default: the one the rigs say they record).", valueName: "ID"))
    var captureId: String?

    @Option(
        name: .customLong("in"), help: ArgumentHelp("How far ahead the shared instant is.", valueName: "DURATION"))
    var lead: Duration = TimeSpan(seconds: 1)

    func run() throws {
        let controller = try broker.controller()
        let recording = Set(controller.rigs.compactMap { $0.status?.captureId })
        guard let id = captureId ?? (recording.count == 1 ? recording.first : nil) else {
            say(
                recording.isEmpty
                    ? "Error: no rig of fleet \(broker.fleet) is recording a capture"
                    : "Error: the rigs record several captures "
                        + "(\(recording.sorted().joined(separator: ", "))): name one with --capture-id"
            )
            throw ExitCode(64)
        }
        let at = MonotonicClock.wallClockNs() + lead.nanoseconds
        try runFleetCommand(
            FleetCommand(command: .stop, captureId: id, atWallClockNs: at), controller: controller,
            deadline: Date().addingTimeInterval(lead.seconds + 30))
    }
}

struct FleetStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "Show every rig of the fleet.")

    @OptionGroup var broker: FleetArguments

    func run() throws {
        let controller = try broker.controller()
        var rows = [["rig", "presence", "state", "capture", "streams (rate/s, dropped)", "free"]]
        for rig in controller.rigs {
            let status = rig.status
            let online = rig.presence?.state == "online"
            let streams = (status?.streams ?? []).map {
                $0.id + cFormat(" %.1f %llu", $0.rate, $0.dropped) + ($0.away == true ? " AWAY" : "")
            }
            // An offline rig's retained status is what it last said.
            let state = status.map { online ? $0.state : "last: \($0.state)" } ?? "?"
            rows.append([
                rig.host, rig.presence?.state ?? "?", state, status?.captureId ?? "",
                online ? streams.joined(separator: ", ") : "",
                online ? status?.freeBytes.map { "\($0 >> 20) MiB" } ?? "" : "",
            ])
        }
        controller.close()
        if rows.count == 1 { say("no rig of fleet \(broker.fleet) has been seen on the broker") }
        print(FleetTable.render(rows))
    }
}

enum FleetTable {
    /// The header first; a row's empty last cells leave no trailing spaces.
    static func render(_ rows: [[String]]) -> String {
        TextColumns.lines(rows).map { line in
            var line = line
            while line.last == " " { line.removeLast() }
            return line
        }.joined(separator: "\n")
    }
}
