#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The reference instant captured at `start()`: the monotonic clock and the wall clock read as a
/// tight pair, so monotonic capture times can be placed on the calendar and across hosts.
public struct SyncPoint: Equatable, Sendable {
    public let monotonicNs: UInt64
    public let wallClockNs: UInt64
    public let hostId: String
    public let timestampMs: UInt64
    public let isoDatetime: String

    public init(monotonicNs: UInt64, wallClockNs: UInt64, hostId: String) {
        self.monotonicNs = monotonicNs
        self.wallClockNs = wallClockNs
        self.hostId = hostId
        self.timestampMs = wallClockNs / 1_000_000
        self.isoDatetime = Self.isoDatetime(wallClockNs: wallClockNs)
    }

    /// Captures a sync point now. Unlike the SDK, which reads the two clocks one after the
    /// other, this keeps the narrowest of a few bracketed reads.
    public static func createNow(hostId: String) -> SyncPoint {
        let pair = MonotonicClock.pairedRead()
        return SyncPoint(monotonicNs: pair.monotonicNs, wallClockNs: pair.wallClockNs, hostId: hostId)
    }

    /// UTC with milliseconds and `Z`, as the SDK's `ISO8601DateFormatter` writes it:
    /// `2024-03-08T09:28:21.123Z`.
    public static func isoDatetime(wallClockNs: UInt64) -> String {
        var seconds = time_t(wallClockNs / 1_000_000_000)
        let millis = Int(wallClockNs / 1_000_000 % 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }

    /// The fields of `sync_point.json`, as the SDK's `toDict()` gives them.
    public func toDict() -> [String: Any] {
        [
            "monotonic_ns": monotonicNs,
            "wall_clock_ns": wallClockNs,
            "host_id": hostId,
            "timestamp_ms": timestampMs,
            "iso_datetime": isoDatetime,
        ]
    }

    /// `sync_point.json` as the SDK writes it.
    var jsonValue: PrettyJSONValue {
        .object([
            "host_id": .string(hostId),
            "iso_datetime": .string(isoDatetime),
            "monotonic_ns": .unsigned(monotonicNs),
            "sdk_version": .string(syncFieldVersion),
            "timestamp_ms": .unsigned(timestampMs),
            "wall_clock_ns": .unsigned(wallClockNs),
        ])
    }
}
