/// A span of time as people write it: `10s`, `500ms`, `2m`, `1h`, or plain seconds, up to a week.
public struct TimeSpan: Equatable, Sendable, CustomStringConvertible {
    public var seconds: Double

    public init(seconds: Double) { self.seconds = seconds }

    /// `maximumSeconds`: a week for what fieldcap does (record, keep); an age to delete by can be
    /// years.
    public init?(_ text: String, maximumSeconds: Double = 7 * 24 * 3600) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]
        var number = text
        var scale = 1.0
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let candidate = String(text.dropLast(suffix.count))
            if Double(candidate) != nil {
                number = candidate
                scale = factor
                break
            }
        }
        guard let value = Double(number), value.isFinite, value > 0, value * scale <= maximumSeconds else { return nil }
        seconds = value * scale
    }

    public var nanoseconds: UInt64 { UInt64(seconds * 1e9) }

    public var description: String {
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds == seconds.rounded() && seconds.truncatingRemainder(dividingBy: 3600) == 0 {
            return "\(Int(seconds / 3600))h"
        }
        if seconds == seconds.rounded() && seconds.truncatingRemainder(dividingBy: 60) == 0 {
            return "\(Int(seconds / 60))m"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }
}

/// A size as people write it: `256M`, `1G`, `500k`, `0`, or plain bytes.
public struct ByteSize: Equatable, Sendable, CustomStringConvertible {
    public var bytes: UInt64

    public init(bytes: UInt64) { self.bytes = bytes }

    public init?(_ text: String) {
        let units: [(Character, UInt64)] = [
            ("k", 1 << 10), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40),
        ]
        var number = text
        var scale: UInt64 = 1
        if let last = number.last, let unit = units.first(where: { $0.0 == last }) {
            scale = unit.1
            number.removeLast()
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * Double(scale) < 1e18 else { return nil }
        bytes = UInt64(value * Double(scale))
    }

    public var description: String {
        // One decimal, as printf's %.1f rounds it: bytes over a power of two are exact in binary,
        // so a tie (1.25) is a true tie, and goes to the even digit.
        for (suffix, size) in [("G", UInt64(1) << 30), ("M", 1 << 20), ("k", 1 << 10)] where bytes >= size {
            let tenths = UInt64((Double(bytes) / Double(size) * 10).rounded(.toNearestOrEven))
            return "\(tenths / 10).\(tenths % 10)\(suffix)"
        }
        return "\(bytes)"
    }
}
