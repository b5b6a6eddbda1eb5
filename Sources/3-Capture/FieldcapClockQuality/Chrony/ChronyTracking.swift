/// chronyd's view of the system clock, as `chronyc -c tracking` prints it (one CSV line):
/// reference id (hex), reference address, stratum, reference time (Unix seconds), system time
/// correction, last offset, RMS offset (seconds), frequency, residual frequency, skew (ppm), root
/// delay, root dispersion, update interval (seconds), leap status.
public struct ChronyTracking: Equatable, Sendable {
    /// `7F000001`; `7F7F0101` is chrony's own `local` reference (no source at all).
    public var referenceId: String
    /// The source's address, empty when there is none.
    public var referenceAddress: String
    public var stratum: Int
    public var referenceTimeUnixSeconds: Double
    /// What chronyd is slewing the clock by, as the CSV spells it: positive when the system clock
    /// is slow of NTP time, negative when it is fast (the human form says "fast"/"slow").
    public var systemTimeCorrectionSeconds: Double
    public var lastOffsetSeconds: Double
    public var rmsOffsetSeconds: Double
    public var frequencyPpm: Double
    public var residualFrequencyPpm: Double
    public var skewPpm: Double
    public var rootDelaySeconds: Double
    public var rootDispersionSeconds: Double
    public var updateIntervalSeconds: Double
    /// `Normal`, `Insert second`, `Delete second` or `Not synchronised`.
    public var leapStatus: String

    /// chrony's id of its `local` reference: the clock is its own source, not disciplined.
    public static let localReferenceId = "7F7F0101"

    /// Parses the one line of `chronyc -c tracking`; nil for anything else.
    public init?(csv: String) {
        let lines = csv.split(whereSeparator: \.isNewline)
        guard lines.count == 1 else { return nil }
        let fields = lines[0].split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 14, fields[0].count == 8, UInt32(fields[0], radix: 16) != nil,
            let stratum = Int(fields[2])
        else { return nil }
        var numbers: [Double] = []
        for index in 3...12 {
            guard let value = Double(fields[index]), value.isFinite else { return nil }
            numbers.append(value)
        }
        referenceId = fields[0].uppercased()
        referenceAddress = fields[1]
        self.stratum = stratum
        referenceTimeUnixSeconds = numbers[0]
        systemTimeCorrectionSeconds = numbers[1]
        lastOffsetSeconds = numbers[2]
        rmsOffsetSeconds = numbers[3]
        frequencyPpm = numbers[4]
        residualFrequencyPpm = numbers[5]
        skewPpm = numbers[6]
        rootDelaySeconds = numbers[7]
        rootDispersionSeconds = numbers[8]
        updateIntervalSeconds = numbers[9]
        leapStatus = fields[13]
    }

    /// Disciplined by a real source: synchronised, and not only to chrony's own `local` clock.
    public var synchronisedToSource: Bool {
        leapStatus != "Not synchronised" && referenceId != Self.localReferenceId && referenceId != "00000000"
    }

    /// The bound on the system clock's error that chrony's documentation gives (chronyc's
    /// `tracking`): |system time offset| + root dispersion + root delay / 2, which holds as far as
    /// the stratum-1 source is right. nil when the clock is not disciplined by a source.
    public var errorBoundSeconds: Double? {
        guard synchronisedToSource else { return nil }
        return abs(systemTimeCorrectionSeconds) + rootDispersionSeconds + rootDelaySeconds / 2
    }

    /// Why the clock does not count as disciplined, in a user's words; nil when it does.
    public var notSynchronisedReason: String? {
        if synchronisedToSource { return nil }
        if referenceId == Self.localReferenceId {
            return "chronyd serves its own clock (the `local` directive) and follows no source"
        }
        return "chronyd is not synchronised to any source"
    }
}
