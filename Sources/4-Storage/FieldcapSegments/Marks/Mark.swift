/// A moment someone marked on a recording (`fieldcap mark`, the API, a fleet, a GPIO line, a
/// key): its instant, a label, and the window around it that the storage budget keeps longest.
///
/// In the recording index (`recording.json`, `marks`) and, one line each, in the `events.ndjson` of
/// the segment its instant falls in.
public struct Mark: Codable, Sendable, Equatable {
    /// `m1`, `m2`... in the order the recording took them.
    public var id: String
    public var label: String
    public var note: String?
    /// Where it came from: `command`, `api`, `fleet`, `key`, `gpio:gpiochip0:17`.
    public var source: String
    /// `CLOCK_MONOTONIC_RAW` of the moment it arrived (a GPIO edge: of the edge, from the kernel's
    /// event timestamp; a fleet mark: of the fleet's instant on this host's clock).
    public var captureNs: UInt64
    /// The same instant in UTC, through the recording's sync point: as text (milliseconds), and
    /// as nanoseconds since the epoch.
    public var utc: String
    public var wallClockNs: UInt64?
    public var beforeSeconds: Double
    public var afterSeconds: Double
    /// How far `captureNs` may be from the true instant, when it is known: a GPIO edge's, from
    /// the kernel's time mapped into RAW.
    public var uncertaintyNs: UInt64?
    /// Set when the storage budget could not keep its window and deleted it, oldest marks first:
    /// when, and the limit.
    public var evicted: RecordingIndex.Deletion?

    public init(
        id: String, label: String, note: String?, source: String, captureNs: UInt64, utc: String,
        beforeSeconds: Double, afterSeconds: Double
    ) {
        self.id = id
        self.label = label
        self.note = note
        self.source = source
        self.captureNs = captureNs
        self.utc = utc
        self.beforeSeconds = beforeSeconds
        self.afterSeconds = afterSeconds
    }

    /// Where the window begins, `CLOCK_MONOTONIC_RAW` (clamped at 0).
    public var windowStartNs: UInt64 {
        let before = Self.nanoseconds(beforeSeconds)
        return captureNs > before ? captureNs - before : 0
    }

    /// Where the window ends, not included.
    public var windowEndNs: UInt64 {
        let (sum, overflow) = captureNs.addingReportingOverflow(Self.nanoseconds(afterSeconds))
        return overflow ? .max : sum &+ 1
    }

    /// Whether the window reaches into [startNs, endNs).
    public func windowTouches(startNs: UInt64, endNs: UInt64) -> Bool {
        windowStartNs < endNs && startNs < windowEndNs
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return seconds >= 1.8e10 ? UInt64.max / 2 : UInt64(seconds * 1e9)
    }

    enum CodingKeys: String, CodingKey {
        case id, label, note, source, captureNs = "capture_ns", utc, wallClockNs = "wall_clock_ns"
        case beforeSeconds = "before_seconds"
        case afterSeconds = "after_seconds", uncertaintyNs = "uncertainty_ns", evicted
    }
}
