/// ptp4l's state, as linuxptp's `pmc` prints its answers to `GET TIME_STATUS_NP`,
/// `GET PORT_DATA_SET` and `GET CURRENT_DATA_SET`: each answer a line
/// `<port identity> seq <n> RESPONSE MANAGEMENT <ID>`, then one indented `name value` line per field.
public struct PTPStatus: Equatable, Sendable {
    /// `SLAVE`, `MASTER`, `LISTENING`, `UNCALIBRATED`, `FAULTY`, ...: the first port's, from PORT_DATA_SET.
    public var portState: String?
    /// The clock's offset from its master, nanoseconds (TIME_STATUS_NP `master_offset`).
    public var masterOffsetNs: Int64?
    /// The one-way delay to the master, nanoseconds (CURRENT_DATA_SET `meanPathDelay`).
    public var meanPathDelayNs: Double?
    public var stepsRemoved: Int?
    /// A grandmaster is known (TIME_STATUS_NP `gmPresent`).
    public var gmPresent: Bool?
    public var gmIdentity: String?

    /// The answers' fields by management id (`TIME_STATUS_NP`: [`master_offset`: `-235`, ...]).
    public static func answers(_ output: String) -> [String: [String: String]] {
        var answers: [String: [String: String]] = [:]
        var current: String?
        for line in output.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            if let index = words.firstIndex(of: "MANAGEMENT"), index > 0, words[index - 1] == "RESPONSE",
                index + 1 < words.count
            {
                // The first answer of each kind: pmc asks one port's, or the first of several.
                current = answers[words[index + 1]] == nil ? words[index + 1] : nil
                if let current { answers[current] = [:] }
            } else if line.first == "\t" || line.first == " ", let current, words.count >= 2 {
                answers[current]?[words[0]] = words[1...].joined(separator: " ")
            } else {
                current = nil  // `sending: ...`
            }
        }
        return answers
    }

    /// Reads pmc's output; nil when it holds no answer at all (no ptp4l at that socket: pmc
    /// prints only what it sent, and exits 0).
    public init?(pmcOutput: String) {
        let answers = Self.answers(pmcOutput)
        guard !answers.isEmpty else { return nil }
        let time = answers["TIME_STATUS_NP"] ?? [:]
        let port = answers["PORT_DATA_SET"] ?? [:]
        let current = answers["CURRENT_DATA_SET"] ?? [:]
        portState = port["portState"]
        masterOffsetNs =
            time["master_offset"].flatMap { Int64($0) }
            ?? current["offsetFromMaster"].flatMap { Double($0) }.map { Int64($0.rounded()) }
        gmPresent = time["gmPresent"].map { $0 == "true" }
        gmIdentity = time["gmIdentity"]
        meanPathDelayNs = current["meanPathDelay"].flatMap { Double($0) }
        stepsRemoved = current["stepsRemoved"].flatMap { Int($0) }
    }

    /// Following a grandmaster through a port in SLAVE state.
    public var synchronised: Bool { portState == "SLAVE" && gmPresent == true && masterOffsetNs != nil }

    /// |offset from master| + mean path delay: the servo's last offset, and at most the one-way
    /// delay again for an asymmetric path, which PTP cannot see (it assumes both ways are equal).
    /// nil when not following a master. This is the clock ptp4l disciplines: the system clock
    /// with software time stamping, a NIC's clock with hardware time stamping (phc2sys then
    /// carries it to the system clock, with an offset of its own that pmc does not report).
    public var errorBoundSeconds: Double? {
        guard synchronised, let offset = masterOffsetNs else { return nil }
        return (Double(offset.magnitude) + max(0, meanPathDelayNs ?? 0)) / 1e9
    }

    /// Why the clock does not count as disciplined by PTP, in a user's words; nil when it does.
    public var notSynchronisedReason: String? {
        if synchronised { return nil }
        if let portState, portState != "SLAVE" { return "ptp4l's port is \(portState), not following a master" }
        return "ptp4l knows no grandmaster"
    }
}
