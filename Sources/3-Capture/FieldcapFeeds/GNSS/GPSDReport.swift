import FieldcapCore
import SyncField

/// One report of gpsd's JSON protocol (`?WATCH={"json":true}`), read for a GNSS stream: a fix
/// (`TPV`) as a record's channels, the satellites (`SKY`) kept for the next fix, a time offset
/// (`PPS`, `TOFF`) for the sidecar.
///
/// gpsd's own names are kept (`lat`, `lon`, `altHAE`, `epx`, `speed`...: gpsd's JSON
/// documentation describes them), every numeric member of the report; `time` (UTC, ISO 8601)
/// becomes `time_ns`, nanoseconds since the epoch.
enum GPSDReport {
    case fix([String: ChannelValue])
    case sky([String: ChannelValue])
    /// GNSS time minus the host's `CLOCK_REALTIME` at the same instant, in ns: a pulse's
    /// (`PPS`) or a fix message's arrival (`TOFF`).
    case offset(kind: String, offsetNs: Int64)
    /// A report of another class (VERSION, DEVICES, WATCH, DEVICE, ERROR...), or none.
    case other(String?)

    static func read(_ line: UnsafeRawBufferPointer) -> GPSDReport {
        guard let report = JSONValue.parse(line), let members = report.objectValue else { return .other(nil) }
        let kind = members["class"]?.stringValue
        switch kind {
        case "TPV":
            var channels = numbers(members)
            if let time = members["time"]?.stringValue, let ns = UTCTime.parse(time), ns <= UInt64(Int64.max) {
                channels["time_ns"] = Int(ns)
            }
            return .fix(channels)
        case "SKY":
            var channels = numbers(members)
            // gpsd 3.22 counts the satellites itself (nSat, uSat); older ones only list them.
            if let satellites = members["satellites"]?.arrayValue {
                channels["nSat"] = channels["nSat"] ?? satellites.count
                channels["uSat"] =
                    channels["uSat"] ?? satellites.filter { $0["used"]?.boolValue == true }.count
            }
            return .sky(channels)
        case "PPS", "TOFF":
            guard let realSec = members["real_sec"]?.int64Value, let realNsec = members["real_nsec"]?.int64Value,
                let clockSec = members["clock_sec"]?.int64Value, let clockNsec = members["clock_nsec"]?.int64Value
            else { return .other(kind) }
            let (real, realOverflow) = realSec.multipliedReportingOverflow(by: 1_000_000_000)
            let (clock, clockOverflow) = clockSec.multipliedReportingOverflow(by: 1_000_000_000)
            guard !realOverflow, !clockOverflow else { return .other(kind) }
            return .offset(kind: kind!, offsetNs: (real &+ realNsec) &- (clock &+ clockNsec))
        default:
            return .other(kind)
        }
    }

    /// The report's numeric members (booleans and text left out), as the SDK takes them.
    private static func numbers(_ members: [String: JSONValue]) -> [String: ChannelValue] {
        var channels: [String: ChannelValue] = [:]
        for (key, value) in members {
            switch value {
            case .integer(let number): channels[key] = Int(number)
            case .unsigned(let number): channels[key] = number
            case .double(let number) where number.isFinite: channels[key] = number
            default: continue
            }
        }
        return channels
    }
}
