import FieldcapCore

extension GPSDSource {
    /// gpsd's address, how fixes are stamped, and (once the reader ended) the fixes, the receivers
    /// gpsd read and the time offsets it reported, for the sidecar's `gnss` section.
    public var report: SourceReport {
        let granted: [String: JSONValue] = [
            "device": .string(descriptor.device), "host": .string(options.host), "port": JSONValue(Int(options.port)),
            "pps": .bool(options.pps), "rate": .double(descriptor.nominalRate),
        ]
        var details: [String: JSONValue] = [
            "fixes": JSONValue(tally.fixes.load(ordering: .relaxed)),
            "connections": JSONValue(tally.connections.load(ordering: .relaxed)),
            "receivers": .array(tally.devices.withLock { $0 }.map { .string($0) }),
            "no_free_slot": JSONValue(tally.noSlot.load(ordering: .relaxed)),
        ]
        if let version = tally.version.withLock({ $0 }) { details["gpsd_version"] = .string(version) }
        let offsets = self.offsets
        if !offsets.isEmpty { details["time_offsets"] = Self.offsetsEntry(offsets) }
        var warnings: [String] = []
        if options.pps && offsets.isEmpty {
            warnings.append("gpsd reported no PPS or TOFF: no offset between GNSS time and this host's clock")
        }
        return SourceReport(
            kind: "gnss", granted: .object(granted),
            summary: "gpsd at \(options.host):\(options.port)" + (options.pps ? ", PPS and TOFF asked for" : ""),
            timeSource: "arrival of gpsd's report", timestamps: Self.timestamps, details: .object(details),
            warnings: warnings)
    }

    /// `{"TOFF": {"count": 12, "first_ns": ..., "last_ns": ..., "min_ns": ..., "max_ns": ...}}`:
    /// GNSS time minus the host's `CLOCK_REALTIME`, per kind.
    public static func offsetsEntry(_ offsets: [String: OffsetStatistics]) -> JSONValue {
        .object(
            offsets.mapValues { statistics in
                [
                    "count": JSONValue(statistics.count), "first_ns": JSONValue(statistics.firstNs),
                    "last_ns": JSONValue(statistics.lastNs), "min_ns": JSONValue(statistics.minimumNs),
                    "max_ns": JSONValue(statistics.maximumNs),
                ]
            })
    }

    static let timestamps = [
        "capture_ns":
            "CLOCK_MONOTONIC_RAW when gpsd's report of the fix arrived; the fix's own instant is its time_ns "
            + "(GNSS time, UTC ns), and gnss.time_offsets says how GNSS time and this host's clock differ",
        "uncertainty_ns":
            "500 ms: a fix reaches gpsd as a serial message after its instant, and fieldcap after gpsd read it",
    ]
}
