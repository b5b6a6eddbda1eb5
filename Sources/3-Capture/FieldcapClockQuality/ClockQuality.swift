import FieldcapCore

/// How the host's wall clock was disciplined when a sync point was taken, and the bound on its
/// error that follows: what the SyncField service's alignment of several hosts rests on. Read
/// from chronyd (`chronyc`) or ptp4l (`pmc`), through their own tools; "not synchronised" when
/// neither answers. Never an error: a recording goes on without it.
public struct ClockQuality: Equatable, Sendable {
    public enum Discipline: Equatable, Sendable {
        case chrony(ChronyTracking)
        case ptp(PTPStatus)
        case none
    }

    /// What disciplines the clock: chrony when chronyd follows a source (with ptp4l beside it,
    /// chronyd is what steers the system clock, often from the PTP clock as a refclock); else
    /// PTP when ptp4l follows a master; else whichever answered, or none.
    public var discipline: Discipline
    /// Also what the other daemon said, when both answered.
    public var ptpBeside: PTPStatus?
    /// What was tried and did not answer, in a user's words (`chronyc: no chronyd at
    /// /run/chrony/chronyd.sock`).
    public var notes: [String]
    /// `CLOCK_MONOTONIC_RAW` when the daemons were asked.
    public var readAtMonotonicRawNs: UInt64

    public init(discipline: Discipline, ptpBeside: PTPStatus? = nil, notes: [String] = [], readAtMonotonicRawNs: UInt64)
    {
        self.discipline = discipline
        self.ptpBeside = ptpBeside
        self.notes = notes
        self.readAtMonotonicRawNs = readAtMonotonicRawNs
    }

    /// The bound on the wall clock's error, seconds; nil when it is not disciplined by a source.
    public var errorBoundSeconds: Double? {
        switch discipline {
        case .chrony(let tracking): tracking.errorBoundSeconds
        case .ptp(let status): status.errorBoundSeconds
        case .none: nil
        }
    }

    public var synchronised: Bool { errorBoundSeconds != nil }

    /// `chrony`, `ptp` or `none`.
    public var sourceName: String {
        switch discipline {
        case .chrony: "chrony"
        case .ptp: "ptp"
        case .none: "none"
        }
    }

    /// The sidecar's `wall_clock` entry. `monotonicNs` is the sync point's, so the entry says how
    /// long after it the daemons were asked.
    public func sidecarEntry(syncPointMonotonicNs: UInt64) -> [String: JSONValue] {
        var entry: [String: JSONValue] = [
            "source": .string(sourceName), "synchronised": .bool(synchronised),
            "read_seconds_after_sync_point":
                .double(Double(Int64(bitPattern: readAtMonotonicRawNs &- syncPointMonotonicNs)) / 1e9),
        ]
        if let bound = errorBoundSeconds {
            entry["error_bound_seconds"] = .double(bound)
            entry["error_bound_ns"] = JSONValue(Int64((bound * 1e9).rounded(.up)))
        }
        switch discipline {
        case .chrony(let tracking):
            entry["chrony"] = .object(Self.entry(tracking))
            if let reason = tracking.notSynchronisedReason { entry["not_synchronised"] = .string(reason) }
        case .ptp(let status):
            if let reason = status.notSynchronisedReason { entry["not_synchronised"] = .string(reason) }
        case .none:
            entry["not_synchronised"] = .string(
                notes.isEmpty ? "no chronyd or ptp4l answered" : notes.joined(separator: "; "))
        }
        if let ptp = ptpStatus { entry["ptp"] = .object(Self.entry(ptp)) }
        if !notes.isEmpty { entry["notes"] = .array(notes.map(JSONValue.string)) }
        return entry
    }

    private var ptpStatus: PTPStatus? {
        if case .ptp(let status) = discipline { return status }
        return ptpBeside
    }

    static func entry(_ tracking: ChronyTracking) -> [String: JSONValue] {
        [
            "reference_id": .string(tracking.referenceId), "reference_address": .string(tracking.referenceAddress),
            "stratum": JSONValue(tracking.stratum),
            "reference_time_unix_seconds": .double(tracking.referenceTimeUnixSeconds),
            // chronyc's sign turned into an offset: positive when the system clock is ahead.
            "system_time_offset_seconds": .double(-tracking.systemTimeCorrectionSeconds),
            "last_offset_seconds": .double(tracking.lastOffsetSeconds),
            "rms_offset_seconds": .double(tracking.rmsOffsetSeconds), "frequency_ppm": .double(tracking.frequencyPpm),
            "residual_frequency_ppm": .double(tracking.residualFrequencyPpm), "skew_ppm": .double(tracking.skewPpm),
            "root_delay_seconds": .double(tracking.rootDelaySeconds),
            "root_dispersion_seconds": .double(tracking.rootDispersionSeconds),
            "update_interval_seconds": .double(tracking.updateIntervalSeconds),
            "leap_status": .string(tracking.leapStatus),
        ]
    }

    static func entry(_ status: PTPStatus) -> [String: JSONValue] {
        var entry: [String: JSONValue] = [:]
        if let value = status.portState { entry["port_state"] = .string(value) }
        if let value = status.masterOffsetNs { entry["offset_from_master_ns"] = JSONValue(value) }
        if let value = status.meanPathDelayNs { entry["mean_path_delay_ns"] = .double(value) }
        if let value = status.stepsRemoved { entry["steps_removed"] = JSONValue(value) }
        if let value = status.gmPresent { entry["gm_present"] = .bool(value) }
        if let value = status.gmIdentity { entry["gm_identity"] = .string(value) }
        return entry
    }
}
