import ArgumentParser
import FieldcapArchive
import FieldcapCore
import FieldcapSession
import FoundationEssentials
import SyncField

struct Sessions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "List the sessions and recordings under a root, or delete them (sessions rm).",
        discussion: """
            Examples:
              fieldcap sessions                      # ./sessions (or $FIELDCAP_ROOT)
              fieldcap sessions /data/rig --json     # one JSON array, for scripts
              fieldcap sessions rm --root /data/rig rig-20261123T140200Z
              fieldcap sessions rm --root /data/rig --older-than 7d --dry-run
            """,
        subcommands: [SessionsList.self, SessionsRemove.self],
        defaultSubcommand: SessionsList.self)
}

/// Where sessions are when no root is given: where `record` makes them.
private var defaultRoot: String { RecordingSettings.defaultRoot }

struct SessionsList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List every session and recording under a root, newest first.",
        discussion: """
            Each line: the directory's name, its start (UTC), how long it ran, its size on
            disk, its state, and its streams with their frame or sample counts. A
            segmented recording (--segment) shows its segments and the time they span.
            States: complete; recording (a fieldcap is writing it now); needs recover (it
            was not finished: run `fieldcap recover` on it); not fieldcap's (a directory
            with neither fieldcap.json nor recording.json). Read from the sidecars,
            manifests and recording indexes only, so a root with thousands of segments
            lists at once.
            """)

    @Argument(help: "The root (default: $FIELDCAP_ROOT, else ./sessions).", completion: .directory)
    var root: String?

    @Flag(help: "Print one JSON array of the entries, for scripts.")
    var json = false

    func run() throws {
        let root = root ?? defaultRoot
        let entries: [CatalogEntry]
        do { entries = try SessionCatalog.entries(root: root) } catch {
            say("Error: \(root): cannot list it (\(errorText(error))); give the root sessions are in")
            throw ExitCode(66)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(entries), as: UTF8.self))
            return
        }
        guard !entries.isEmpty else {
            print("\(root): no sessions")
            return
        }
        print(CatalogTable.render(entries))
        let total = entries.reduce(UInt64(0)) { $0 + $1.bytes }
        print("\(entries.count) entr\(entries.count == 1 ? "y" : "ies"), \(ByteSize(bytes: total)) on disk")
    }
}

/// Rows as left-aligned columns two spaces apart, the last column unpadded: the commands' tables.
enum TextColumns {
    static func lines(_ rows: [[String]]) -> [String] {
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).enumerated().map { column, cell in
                column == row.count - 1 ? cell.0 : cell.0 + String(repeating: " ", count: cell.1 - cell.0.count)
            }.joined(separator: "  ")
        }
    }
}

/// `fieldcap sessions` as a table.
enum CatalogTable {
    static func render(_ entries: [CatalogEntry]) -> String {
        let rows = entries.map { entry -> [String] in
            [
                entry.name, entry.startUtc.map(shortTime) ?? "-", entry.durationSeconds.map(duration) ?? "-",
                "\(ByteSize(bytes: entry.bytes))", entry.state.rawValue + (entry.note.map { " (\($0))" } ?? ""),
                contents(entry),
            ]
        }
        let header = ["NAME", "START (UTC)", "DURATION", "SIZE", "STATE", "STREAMS"]
        return TextColumns.lines([header] + rows).joined(separator: "\n")
    }

    static func contents(_ entry: CatalogEntry) -> String {
        var parts: [String] = []
        if let segments = entry.segments {
            var text = "\(segments) segment\(segments == 1 ? "" : "s")"
            if let deleted = entry.segmentsDeleted, deleted > 0 { text += " (+\(deleted) deleted)" }
            parts.append(text + ":")
        }
        parts.append(
            entry.streams.map { stream in
                let count = stream.records.map { " \($0)" } ?? ""
                return "\(stream.id)\(count)" + (stream.format.map { " \($0)" } ?? "")
            }.joined(separator: ", "))
        if let check = entry.syncCheck, !check.pairs.isEmpty {
            parts[parts.count - 1] += "; sync " + check.pairs.map(syncText).joined(separator: ", ")
        }
        if let marks = entry.marks, !marks.isEmpty {
            // Labels as a damaged index may hold them: shown, never sent to the terminal raw.
            let shown = marks.suffix(3).map {
                "\($0.id.printable) \($0.label.printable)" + ($0.evicted == nil ? "" : " (given up)")
            }
            parts[parts.count - 1] +=
                "; \(marks.count) mark\(marks.count == 1 ? "" : "s"): " + (marks.count > 3 ? "..., " : "")
                + shown.joined(separator: ", ")
        }
        return parts.joined(separator: " ")
    }

    /// `cam0–imu0 +7.50 ms`, or `cam0–imu0 refused`: a pair of `check-sync --save`.
    static func syncText(_ pair: SyncCheckEntry.Pair) -> String {
        guard let estimate = pair.imageAlignment.estimate else { return "\(pair.camera)–\(pair.imu) refused" }
        return "\(pair.camera)–\(pair.imu) " + cFormat("%+.2f ms", Double(estimate.offsetNs) / 1e6)
    }

    /// `2026-11-23 14:02:00`: the table's column already says UTC.
    static func shortTime(_ iso: String) -> String {
        String(iso.prefix(19)).replacing("T", with: " ")
    }

    static func duration(_ seconds: Double) -> String {
        if seconds < 60 { return cFormat("%.1f s", seconds) }
        let whole = Int(seconds.rounded())
        if whole < 3600 { return cFormat("%ldm%02lds", whole / 60, whole % 60) }
        return cFormat("%ldh%02ldm", whole / 3600, whole / 60 % 60)
    }
}

/// An age to delete by: `7d`, `12h`, `90m`, up to ten years.
struct Age: ExpressibleByArgument {
    var span: TimeSpan

    init?(argument: String) {
        guard let span = TimeSpan(argument, maximumSeconds: 3650 * 86_400) else { return nil }
        self.span = span
    }
}

struct SessionsRemove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete sessions, recordings or segments, by name or by age.",
        discussion: """
            Deletes only what fieldcap wrote: a directory holding any other file, one a
            fieldcap is recording into right now, and (by age) one waiting for `fieldcap
            recover` are refused, each with a line saying why. Every name is checked
            before anything is deleted: one refused name deletes nothing. A segment
            deleted from a recording stays listed in its recording.json as deleted, with
            when and why.

            NAME is a directory under the root: a session, a recording, or
            RECORDING/SEGMENT. --older-than deletes every session and recording that ended
            longer ago than that, and the old segments of a recording that goes on later.

            Exit status: 0 when everything asked for was deleted (or, with --dry-run,
            would be), 1 when something was refused, 64 for a usage error.
            """)

    @Option(
        help: ArgumentHelp("The root the names are in (default: $FIELDCAP_ROOT, else ./sessions).", valueName: "DIR"))
    var root: String?

    @Option(help: ArgumentHelp("Delete what ended longer ago than this: 7d, 12h, 90m.", valueName: "AGE"))
    var olderThan: Age?

    @Flag(help: "Say what would be deleted; delete nothing.")
    var dryRun = false

    @Argument(help: "Sessions, recordings or RECORDING/SEGMENT to delete.")
    var names: [String] = []

    func validate() throws {
        if names.isEmpty && olderThan == nil {
            throw ValidationError("name what to delete, or give --older-than AGE; `fieldcap sessions` lists the root")
        }
        if !names.isEmpty && olderThan != nil {
            throw ValidationError("give names or --older-than, not both")
        }
    }

    func run() throws {
        let root = root ?? defaultRoot
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory), isDirectory else {
            say("Error: --root \(root) is not a directory; give the root sessions are in")
            throw ExitCode(66)
        }
        let plan: SessionRemoval.Plan
        let reason: String
        if let olderThan {
            let now = UInt64(Date().timeIntervalSince1970 * 1e9)
            plan = try SessionRemoval.plan(root: root, endedBefore: now - min(now, olderThan.span.nanoseconds))
            reason = "fieldcap sessions rm --older-than \(olderThan.span)"
        } else {
            plan = SessionRemoval.plan(root: root, names: names)
            reason = "fieldcap sessions rm"
        }
        for refusal in plan.refused { say("Error: \(refusal)") }
        if olderThan == nil && !plan.refused.isEmpty {
            say("nothing deleted")
            throw ExitCode(1)
        }
        if plan.targets.isEmpty { print("nothing to delete under \(root)") }
        if dryRun {
            for target in plan.targets { print("would delete \(target.name) (\(ByteSize(bytes: target.bytes)))") }
        } else {
            try SessionRemoval.remove(plan.targets, reason: reason) { print($0) }
        }
        if !plan.refused.isEmpty { throw ExitCode(1) }
    }
}
