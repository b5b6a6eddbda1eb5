import Glibc

/// Times as the sidecar, the index and the command line spell them, read without
/// `ISO8601DateFormatter` (ICU's set-up costs a small CPU more than the whole listing).
public enum UTCTime {
    /// Nanoseconds since the epoch of `2026-11-23T14:02:00Z`, `2026-11-23T14:02:00.250Z`,
    /// `2026-11-23T15:02:00+01:00` or `2026-11-23 14:02:00Z`; nil for anything else (a time
    /// without a zone too: a rig's local time is not the recording's).
    public static func parse(_ text: String) -> UInt64? {
        let bytes = Array(text.utf8)
        var position = 0
        func number(_ digits: Int) -> Int? {
            guard position + digits <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[position..<position + digits] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            position += digits
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard position < bytes.count, characters.utf8.contains(bytes[position]) else { return false }
            position += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
            expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
            let second = number(2)
        else { return nil }
        var fraction: UInt64 = 0
        if expect(".") {
            var scale: UInt64 = 100_000_000
            var digits = 0
            while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) {
                fraction += UInt64(bytes[position] - UInt8(ascii: "0")) * scale
                scale /= 10
                position += 1
                digits += 1
            }
            guard digits > 0 else { return nil }
        }
        var offsetSeconds = 0
        if expect("Zz") {
        } else if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
            let sign = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            position += 1
            // RFC 3339's offsets: hours below 24, minutes below 60 (`+99:99` is no zone).
            guard let hours = number(2), expect(":"), let minutes = number(2), hours < 24, minutes < 60 else {
                return nil
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard position == bytes.count, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = Int(timegm(&parts)) - offsetSeconds
        guard seconds >= 0, parts.tm_mday == Int32(day) else { return nil }
        // Nanoseconds since the epoch reach past a UInt64 in the year 2554: a later time is not one.
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow, whole <= UInt64.max - fraction else { return nil }
        return whole + fraction
    }
}
