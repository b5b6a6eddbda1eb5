import FieldcapCore

extension FeedSource {
    /// The socket, how records are stamped, and (once the reader has ended) what it took and
    /// refused, for the sidecar's `feed` section.
    public var report: SourceReport {
        let tally = tallySnapshot
        var granted: [String: JSONValue] = [
            "device": .string(descriptor.device), "socket": .string(options.socketPath),
        ]
        if descriptor.nominalRate > 0 { granted["rate"] = .double(descriptor.nominalRate) }
        if let pinned = options.pinned { granted["pinned_channels"] = .array(pinned.map { .string($0) }) }
        var summary = "socket \(options.socketPath)"
        if descriptor.nominalRate > 0 { summary += ", \(SourceReport.rate(descriptor.nominalRate)) Hz expected" }
        if let pinned = options.pinned { summary += ", channels \(pinned.joined(separator: "+"))" }
        var rejected: [String: JSONValue] = [:]
        for (reason, count) in tally.rejected where count > 0 { rejected[reason] = JSONValue(count) }
        var details: [String: JSONValue] = [
            "lines": JSONValue(tally.lines),
            "records": JSONValue(tally.accepted),
            "stamped": .object([
                "by_program": JSONValue(tally.stampedByProgram), "on_arrival": JSONValue(tally.stampedOnArrival),
            ]),
            "rejected": .object(rejected),
            "first_problems": .array(tally.firstProblems.map { .string($0) }),
            "connections": JSONValue(tally.connections),
            "programs_refused": JSONValue(tally.refusedPrograms),
            "disconnections": JSONValue(tally.disconnections),
            "no_free_slot": JSONValue(tally.noSlot),
        ]
        if let channels = tally.firstChannels { details["channels"] = .array(channels.map { .string($0) }) }
        var warnings: [String] = []
        let refused = tally.rejected.values.reduce(0, +)
        if refused > 0 {
            let reasons = tally.rejected.filter { $0.value > 0 }.sorted { $0.key < $1.key }
                .map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            warnings.append("\(refused) line(s) refused (\(reasons)); the sidecar's feed section has the first")
        }
        if tally.stampedOnArrival > 0 && tally.stampedByProgram > 0 {
            warnings.append(
                "\(tally.stampedOnArrival) record(s) without capture_ns were stamped on arrival, "
                    + "\(tally.stampedByProgram) with it by the program")
        }
        return SourceReport(
            kind: "feed", granted: .object(granted), summary: summary,
            timeSource: tally.stampedByProgram > 0 && tally.stampedOnArrival == 0 ? "the program's" : "arrival",
            timestamps: Self.timestamps, details: .object(details), warnings: warnings)
    }

    static let timestamps = [
        "capture_ns":
            "the program's own capture_ns (CLOCK_MONOTONIC_RAW read at its sensor's I/O) where its line "
            + "gives one; else CLOCK_MONOTONIC_RAW when the line arrived (feed.stamped counts each)",
        "uncertainty_ns": "the program's uncertainty_ns where its line gives one; else the SDK's default, 5 ms",
    ]
}
