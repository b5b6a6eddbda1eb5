import Glibc
import SyncField

/// Asks the daemons that discipline the wall clock how well it is disciplined: chronyd through
/// `chronyc -c tracking`, ptp4l through linuxptp's `pmc` (TIME_STATUS_NP, PORT_DATA_SET,
/// CURRENT_DATA_SET). Their own tools, so their access rules hold (chronyc falls back to
/// chronyd's UDP monitoring port when its socket is root's). A tool that is missing, refused or
/// silent makes a note, never an error; each is killed at `timeoutNs`.
public struct ClockQualityReader: Sendable {
    /// Where to ask (`--wall-clock`).
    public enum Source: Equatable, Sendable, CustomStringConvertible {
        /// chronyd where chronyc reaches it by default (when its pid file says it runs), and
        /// ptp4l at its default socket.
        case auto
        /// chronyd only, at this command socket (nil: chronyc's default).
        case chrony(socket: String?)
        /// ptp4l only, at this management socket (`uds_address`).
        case ptp(socket: String)
        /// Do not ask: the sidecar says the clock's discipline was not read.
        case none

        /// `auto`, `none`, `chrony`, `chrony:/run/chrony/chronyd.sock`, `ptp`, `ptp:/var/run/ptp4l`.
        public init?(argument: String) {
            let parts = argument.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            let path = parts.count == 2 ? parts[1] : nil
            if let path, !path.hasPrefix("/") { return nil }
            switch parts.first {
            case "auto" where path == nil: self = .auto
            case "none" where path == nil: self = .none
            case "chrony": self = .chrony(socket: path)
            case "ptp": self = .ptp(socket: path ?? ClockQualityReader.defaultPTPSocket)
            default: return nil
            }
        }

        public var description: String {
            switch self {
            case .auto: "auto"
            case .none: "none"
            case .chrony(let socket): socket.map { "chrony:\($0)" } ?? "chrony"
            case .ptp(let socket): "ptp:\(socket)"
            }
        }
    }

    /// Where chronyd keeps its pid while it runs (its default `pidfile`; Debian's /run, or the
    /// older /var/run). A chronyd configured elsewhere is asked with `--wall-clock chrony`.
    public static let chronydPidFiles = ["/run/chrony/chronyd.pid", "/var/run/chrony/chronyd.pid"]

    /// ptp4l's default `uds_address`.
    public static let defaultPTPSocket = "/var/run/ptp4l"

    public var source: Source
    public var timeoutNs: UInt64
    /// Where chronyc and pmc are looked for.
    public var searchPath: [String] = ["/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin", "/usr/local/sbin"]

    public init(source: Source = .auto, timeoutNs: UInt64 = 2_000_000_000) {
        self.source = source
        self.timeoutNs = timeoutNs
    }

    /// Reads now; the result carries when (`CLOCK_MONOTONIC_RAW`).
    public func read() -> ClockQuality {
        let at = MonotonicClock.now()
        var notes: [String] = []
        var chrony: ChronyTracking?
        var ptp: PTPStatus?
        switch source {
        case .none:
            return ClockQuality(discipline: .none, notes: ["not read (--wall-clock none)"], readAtMonotonicRawNs: at)
        case .auto:
            // No chronyd, no process spawned: a recording's start (and each segment's) costs
            // nothing on a host without one.
            if Self.chronydPidFiles.contains(where: { access($0, F_OK) == 0 }) {
                chrony = askChrony(socket: nil, notes: &notes)
            } else {
                notes.append("chronyc: no chronyd running (no \(Self.chronydPidFiles[0]))")
            }
            if access(Self.defaultPTPSocket, F_OK) == 0 {
                ptp = askPTP(socket: Self.defaultPTPSocket, notes: &notes)
            } else {
                notes.append("pmc: no ptp4l at \(Self.defaultPTPSocket)")
            }
        case .chrony(let socket): chrony = askChrony(socket: socket, notes: &notes)
        case .ptp(let socket): ptp = askPTP(socket: socket, notes: &notes)
        }
        let discipline: ClockQuality.Discipline
        var beside: PTPStatus?
        if let chrony, chrony.synchronisedToSource || ptp?.synchronised != true {
            discipline = .chrony(chrony)
            beside = ptp
        } else if let ptp {
            discipline = .ptp(ptp)
        } else {
            discipline = .none
        }
        return ClockQuality(discipline: discipline, ptpBeside: beside, notes: notes, readAtMonotonicRawNs: at)
    }

    private func askChrony(socket: String?, notes: inout [String]) -> ChronyTracking? {
        guard let chronyc = tool("chronyc") else {
            notes.append("chronyc: not installed (Debian: chrony)")
            return nil
        }
        // -c: one CSV line; -n: addresses, not names (no DNS on a rig's start).
        let output = ToolOutput.run(
            chronyc, (socket.map { ["-h", $0] } ?? []) + ["-c", "-n", "tracking"], timeoutNs: timeoutNs)
        if let tracking = ChronyTracking(csv: output.stdout), output.succeeded { return tracking }
        notes.append("chronyc: \(Self.failure(output, asked: socket.map { "chronyd at \($0)" } ?? "chronyd"))")
        return nil
    }

    private func askPTP(socket: String, notes: inout [String]) -> PTPStatus? {
        guard let pmc = tool("pmc") else {
            notes.append("pmc: not installed (Debian: linuxptp)")
            return nil
        }
        // pmc binds a client socket of its own; in /tmp rather than its default /var/run, which
        // only root may write.
        let client = "/tmp/fieldcap-pmc.\(getpid()).\(MonotonicClock.now() % 1_000_000)"
        defer { unlink(client) }
        let output = ToolOutput.run(
            pmc,
            [
                "-u", "-b", "0", "-s", socket, "-i", client, "GET TIME_STATUS_NP", "GET PORT_DATA_SET",
                "GET CURRENT_DATA_SET",
            ],
            timeoutNs: timeoutNs)
        if let status = PTPStatus(pmcOutput: output.stdout) { return status }
        notes.append("pmc: \(Self.failure(output, asked: "ptp4l at \(socket)"))")
        return nil
    }

    private static func failure(_ output: ToolOutput, asked: String) -> String {
        switch output.ending {
        case .timedOut: "\(asked) did not answer in time"
        case .notStarted(let code): "could not be run (\(String(cString: strerror(code))))"
        case .signalled(let signal): "ended by signal \(signal)"
        case .exited: "no answer from \(asked)"
        }
    }

    private func tool(_ name: String) -> String? {
        searchPath.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

}
