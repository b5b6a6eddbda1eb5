import SyncField

/// Maps times of another host clock (CLOCK_MONOTONIC, CLOCK_REALTIME...) into
/// `CLOCK_MONOTONIC_RAW` from clock pairs the capture thread reads at every dequeue, and says
/// how far each mapped time can be from the truth.
///
/// An NTP daemon changes the other clock's rate in steps (chrony and ntpd at every update; chrony
/// slews at up to 83,333 ppm), and a mapping that extrapolates with an old rate is wrong by the
/// change times the distance. So the capture thread reads a clock pair at each dequeue, a few ms
/// after the kernel stamped the frame, and the tracker keeps the pairs as segments of constant
/// rate:
///
/// - Each new pair is checked against where the current segment's rate predicts it. Within the
///   pairs' brackets (plus the rate's own error) it continues the segment: a timestamp anywhere in
///   the segment maps exactly, up to the pairs' precision.
/// - Further off, the rate changed between the last two pairs (a *kink*), and a new segment
///   starts. A timestamp inside the kink's interval cannot be mapped yet: it depends on when the
///   rate changed. `map` answers `.pending`; once the next pair gives the new segment's rate, the
///   moment of the change is where the two segments' lines meet, and the timestamp maps to the
///   line on its side of it, as precisely as elsewhere. A caller that cannot wait (the stream
///   ended) takes `mapNow`, whose uncertainty covers wherever the change happened.
/// - A jump no rate can explain (the kernel slews by at most 11 %) is
///   a *step* of the other clock (`date -s`, for CLOCK_REALTIME): a timestamp in its interval is
///   on one side or the other, and `map` answers `.ambiguous` with both, for the caller to pick
///   by continuity.
///
/// The uncertainty assumes at most one rate change between two consecutive pairs (NTP daemons
/// change the rate at most a few times a second; pairs come with every frame).
///
/// Plain data: no allocation, no lock, no system call. Thread-bound (the capture thread); read
/// its summary once that thread has been joined.
public struct ClockTracker: Sendable {
    /// One clock pair: the other clock's time, RAW minus it, and the bracket's width.
    struct Anchor: Sendable, Equatable {
        var otherNs: Int64
        var offsetNs: Int64
        var widthNs: Int64

        /// Half the bracket, rounded up: how far the offset can be from the truth.
        var halfWidthNs: Double { Double(widthNs + 1) / 2 }
    }

    /// Consecutive pairs over which the other clock's rate did not change.
    struct Segment: Sendable {
        var first: Anchor
        var last: Anchor
        /// Where the rate is measured from: a pair one to two seconds back, so the rate follows
        /// slow drift and its error shrinks with the baseline.
        var rateFrom: Anchor
        var nextRateFrom: Anchor
        var pairs = 1
        /// d(offset)/d(other): how much slower RAW runs than the other clock, as a fraction.
        var rate = 0.0
        var rateError = 0.0
        /// The latest check's tolerance: a rate change smaller than this went unnoticed, and
        /// can put a timestamp near the latest pair this far off.
        var tolerance = 0.0

        init(_ anchor: Anchor) {
            first = anchor
            last = anchor
            rateFrom = anchor
            nextRateFrom = anchor
        }

        /// The offset at `otherNs` on this segment's line.
        func offset(at otherNs: Int64) -> Double {
            Double(last.offsetNs) + rate * Double(otherNs - last.otherNs)
        }

        /// How far `offset(at:)` can be off inside the segment (or before it, at its rate).
        func error(at otherNs: Int64) -> Double {
            last.halfWidthNs + rateError * Double(abs(last.otherNs - otherNs)) + tolerance
        }
    }

    /// What lies between the previous segment's last pair and the current segment's first.
    enum Change: Sendable, Equatable {
        /// The rate changed somewhere in between.
        case rate
        /// The other clock was set: its offset jumped.
        case step
    }

    /// A mapped time and how far it can be from the truth.
    public struct Mapped: Sendable, Equatable {
        public var rawNs: Int64
        public var uncertaintyNs: Int64
    }

    public enum Mapping: Sendable, Equatable {
        case mapped(Mapped)
        /// In the interval of a rate change whose new rate is not known yet: ask again after the
        /// next pair (or take `mapNow`).
        case pending
        /// In the interval of a step of the other clock: before it or after it.
        case ambiguous(before: Mapped, after: Mapped)
    }

    /// Pairs whose bracket is wider than this (a preempted read) are not used.
    public let maximumBracketNs: Int64
    /// The fastest the offset can change per ns of the other clock: the kernel's tick
    /// adjustment reaches 10 %, and timekeeping refuses more than 11 %, which for a clock running
    /// 11 % slow is 0.11 / 0.89 of its own time. Anything faster is a step.
    public let maximumRate: Double
    /// What the kernel's own rounding adds to a pair beyond its bracket (timekeeping dithers
    /// the clock's multiplier by one unit, well under a ppm).
    public let kernelNoiseNs: Double
    /// How far back the rate is measured from, at least (and at most twice this).
    public let rateBaselineNs: Int64

    private(set) var current: Segment?
    private(set) var previous: Segment?
    private(set) var change: Change?

    /// Pairs used, and pairs refused for their width.
    public private(set) var pairsUsed = 0
    public private(set) var pairsRefused = 0
    /// Rate changes and steps of the other clock seen.
    public private(set) var rateChanges = 0
    public private(set) var steps = 0
    /// The largest uncertainty handed out, and the time (RAW) it was for.
    public private(set) var worstUncertaintyNs: Int64 = 0
    public private(set) var worstUncertaintyAtRawNs: Int64 = 0

    public init(
        maximumBracketNs: Int64 = 20_000, maximumRate: Double = 0.125, kernelNoiseNs: Double = 20,
        rateBaselineNs: Int64 = 1_000_000_000
    ) {
        self.maximumBracketNs = maximumBracketNs
        self.maximumRate = maximumRate
        self.kernelNoiseNs = kernelNoiseNs
        self.rateBaselineNs = rateBaselineNs
    }

    /// The other clock's current rate against RAW in ppm (RAW runs this much faster), or nil
    /// before two pairs.
    public var driftPPM: Double? {
        guard let current, current.pairs >= 2 else { return previous.map { $0.rate * 1e6 } }
        return current.rate * 1e6
    }

    /// The latest pair's offset (RAW − other) and bracket width, or nil before the first.
    public var latest: (offsetNs: Int64, bracketNs: Int64)? {
        current.map { ($0.last.offsetNs, $0.last.widthNs) }
    }

    /// Adds a clock pair taken after every timestamp it will map (at a dequeue). Returns false
    /// when its bracket was too wide to use, or it went backwards.
    @discardableResult
    public mutating func add(_ sample: ClockPairSample) -> Bool {
        guard sample.bracketNs <= maximumBracketNs, sample.bracketNs >= 0 else {
            pairsRefused += 1
            return false
        }
        let anchor = Anchor(otherNs: sample.otherNs, offsetNs: sample.offsetNs, widthNs: sample.bracketNs)
        guard var segment = current else {
            current = Segment(anchor)
            pairsUsed += 1
            return true
        }
        let span = anchor.otherNs - segment.last.otherNs
        guard span > 0 else {
            pairsRefused += 1
            return false
        }
        let noise = segment.last.halfWidthNs + anchor.halfWidthNs + kernelNoiseNs
        let jump = Double(anchor.offsetNs - segment.last.offsetNs)
        // No rate explains this: the other clock was set.
        if abs(jump) > maximumRate * Double(span) + noise {
            startSegment(at: anchor, after: segment, change: .step)
            return true
        }
        if segment.pairs >= 2 {
            let deviation = jump - segment.rate * Double(span)
            let tolerance = noise + segment.rateError * Double(span)
            if abs(deviation) > tolerance {
                startSegment(at: anchor, after: segment, change: .rate)
                return true
            }
            segment.tolerance = tolerance
        } else {
            // The second pair gives the segment its rate; nothing to check it against. A rate
            // change inside this interval goes unseen: its error is bounded by the next check's.
            segment.tolerance = noise
        }
        segment.last = anchor
        segment.pairs += 1
        if anchor.otherNs - segment.nextRateFrom.otherNs >= rateBaselineNs {
            segment.rateFrom = segment.nextRateFrom
            segment.nextRateFrom = anchor
        }
        let baseline = Double(anchor.otherNs - segment.rateFrom.otherNs)
        segment.rate = Double(anchor.offsetNs - segment.rateFrom.offsetNs) / baseline
        segment.rateError = (segment.rateFrom.halfWidthNs + anchor.halfWidthNs) / baseline
        current = segment
        pairsUsed += 1
        return true
    }

    private mutating func startSegment(at anchor: Anchor, after segment: Segment, change: Change) {
        previous = segment
        self.change = change
        current = Segment(anchor)
        if change == .rate { rateChanges += 1 } else { steps += 1 }
        pairsUsed += 1
    }

    /// `otherNs` in RAW, if it can be known now.
    public mutating func map(_ otherNs: Int64) -> Mapping? {
        guard let mapping = locate(otherNs) else { return nil }
        switch mapping {
        case .mapped(let mapped): note(mapped)
        case .ambiguous(let before, let after):
            note(before)
            note(after)
        case .pending: break
        }
        return mapping
    }

    /// `otherNs` in RAW now, for a caller that cannot wait for the next pair: inside a rate
    /// change's interval the uncertainty covers a change anywhere in it. An ambiguous time (at a
    /// step) takes the side after the step. Nil before the first pair. `handedOut` false: the
    /// time is not a stamp written out (the worst bound handed out does not count it).
    public mutating func mapNow(_ otherNs: Int64, handedOut: Bool = true) -> Mapped? {
        guard let mapping = locate(otherNs) else { return nil }
        let mapped: Mapped
        switch mapping {
        case .mapped(let value): mapped = value
        case .ambiguous(_, let after): mapped = after
        case .pending: mapped = beforeNewRate(otherNs)
        }
        if handedOut { note(mapped) }
        return mapped
    }

    private mutating func note(_ mapped: Mapped) {
        if mapped.uncertaintyNs > worstUncertaintyNs {
            worstUncertaintyNs = mapped.uncertaintyNs
            worstUncertaintyAtRawNs = mapped.rawNs
        }
    }

    private func locate(_ otherNs: Int64) -> Mapping? {
        guard let current else { return nil }
        if otherNs >= current.first.otherNs {
            return .mapped(onSegment(current, otherNs, fallbackRate: previous?.rate))
        }
        guard let previous, let change else {
            // Before the first pair: the first segment's rate, if it has one, and any rate up to
            // the kernel's limit over the distance.
            var mapped = onSegment(current, otherNs, fallbackRate: nil)
            mapped.uncertaintyNs += Self.ceil(maximumRate * Double(current.first.otherNs - otherNs))
            return .mapped(mapped)
        }
        if otherNs <= previous.last.otherNs {
            var mapped = onSegment(previous, otherNs, fallbackRate: nil)
            if otherNs < previous.first.otherNs {
                // Older than the pairs kept: another change may lie between.
                mapped.uncertaintyNs += Self.ceil(maximumRate * Double(previous.first.otherNs - otherNs))
            }
            return .mapped(mapped)
        }
        switch change {
        case .step:
            let after =
                current.pairs >= 2 ? current : Segment(current.first, rate: previous.rate, error: previous.rateError)
            return .ambiguous(
                before: onSegment(previous, otherNs, fallbackRate: nil),
                after: onSegment(after, otherNs, fallbackRate: nil))
        case .rate:
            guard current.pairs >= 2 else { return .pending }
            return .mapped(acrossRateChange(otherNs, before: previous, after: current))
        }
    }

    /// On a segment's line; a segment of one pair has no rate of its own yet.
    private func onSegment(_ segment: Segment, _ otherNs: Int64, fallbackRate: Double?) -> Mapped {
        var segment = segment
        if segment.pairs < 2 {
            segment.rate = fallbackRate ?? 0
            segment.rateError = maximumRate
        }
        var error = segment.error(at: otherNs)
        // Past the latest pair the rate may change before the time comes.
        if otherNs > segment.last.otherNs && segment.pairs >= 2 {
            error += maximumRate * Double(otherNs - segment.last.otherNs)
        }
        return Mapped(rawNs: otherNs + Self.round(segment.offset(at: otherNs)), uncertaintyNs: Self.ceil(error))
    }

    /// Inside the interval of a rate change, with both rates known. With one change, the truth
    /// at `otherNs` is on the old line (`before`, through the interval's first pair) if the change
    /// came later, and on the new line (`after`, through its last pair) if it came earlier. The
    /// change happened where the two lines meet: a time clearly on one side takes that line; near
    /// the meeting point the lines agree to within their errors, and the time takes the middle.
    private func acrossRateChange(_ otherNs: Int64, before: Segment, after: Segment) -> Mapped {
        let start = before.last
        let end = after.first
        let span = Double(end.otherNs - start.otherNs)
        let old = before.offset(at: otherNs)
        let new = after.offset(at: otherNs)
        let noise = before.error(at: otherNs) + after.error(at: otherNs)
        // One change means the lines cross inside the interval: the old line must end on the
        // new pair's side and the new line start on the old pair's, or be within their errors.
        let atStart = Double(start.offsetNs) - after.offset(at: start.otherNs)
        let atEnd = before.offset(at: end.otherNs) - Double(end.offsetNs)
        let endNoise = before.error(at: end.otherNs) + after.error(at: start.otherNs)
        guard atStart.sign != atEnd.sign || min(abs(atStart), abs(atEnd)) <= endNoise else {
            // Not one change (two, or a glitch): whatever happened, the rate stayed within the
            // kernel's limit on either side.
            return withinRateLimit(otherNs, from: start, to: end)
        }
        let rateDifference = before.rate - after.rate
        // Where the lines meet, from `start`: oStart + rBefore·x = oEnd + rAfter·(x − span).
        let meeting = (Double(end.offsetNs - start.offsetNs) - after.rate * span) / rateDifference
        let sinceStart = Double(otherNs - start.otherNs)
        let slack = noise / abs(rateDifference)
        if meeting.isFinite && abs(sinceStart - meeting) > slack {
            let value = sinceStart < meeting ? old : new
            return Mapped(rawNs: otherNs + Self.round(value), uncertaintyNs: Self.ceil(noise))
        }
        return Mapped(
            rawNs: otherNs + Self.round((old + new) / 2), uncertaintyNs: Self.ceil(abs(old - new) / 2 + noise))
    }

    /// Inside a rate change's interval with only the old rate known. If the change came after
    /// `otherNs` the old line is exact there; if before, the offset moved from the old line
    /// towards the new pair. With one change, the truth lies between the old line and the old
    /// line plus the pair's whole deviation scaled by how far into the interval the time is.
    private func beforeNewRate(_ otherNs: Int64) -> Mapped {
        guard let previous, let current else { return Mapped(rawNs: otherNs, uncertaintyNs: .max) }
        let start = previous.last
        let end = current.first
        let span = Double(end.otherNs - start.otherNs)
        let old = previous.offset(at: otherNs)
        let deviation = Double(end.offsetNs) - previous.offset(at: end.otherNs)
        let reach = deviation * Double(otherNs - start.otherNs) / span
        let error = previous.error(at: otherNs) + end.halfWidthNs
        let single = Mapped(
            rawNs: otherNs + Self.round(old + reach / 2), uncertaintyNs: Self.ceil(abs(reach) / 2 + error))
        let limited = withinRateLimit(otherNs, from: start, to: end)
        return limited.uncertaintyNs < single.uncertaintyNs ? limited : single
    }

    /// Any path between two pairs whose rate stays within `maximumRate`.
    private func withinRateLimit(_ otherNs: Int64, from start: Anchor, to end: Anchor) -> Mapped {
        let fromStart = maximumRate * Double(otherNs - start.otherNs) + start.halfWidthNs + kernelNoiseNs
        let toEnd = maximumRate * Double(end.otherNs - otherNs) + end.halfWidthNs + kernelNoiseNs
        let low = max(Double(start.offsetNs) - fromStart, Double(end.offsetNs) - toEnd)
        let high = min(Double(start.offsetNs) + fromStart, Double(end.offsetNs) + toEnd)
        let middle = (low + high) / 2
        return Mapped(rawNs: otherNs + Self.round(middle), uncertaintyNs: Self.ceil(max(0, high - low) / 2))
    }

    private static func round(_ value: Double) -> Int64 { Int64(value.rounded()) }
    private static func ceil(_ value: Double) -> Int64 { value >= 9e18 ? .max : Int64(value.rounded(.up)) }
}

extension ClockTracker.Segment {
    /// A segment of one pair given a rate from elsewhere (the side after a step).
    init(_ anchor: ClockTracker.Anchor, rate: Double, error: Double) {
        self.init(anchor)
        self.rate = rate
        rateError = error
        pairs = 2
    }
}

extension ClockTracker {
    /// The mapping as the sidecar and `bench jitter` report it: where it stood at the end, the
    /// changes it saw, and the widest bound it handed out with when (RAW).
    public func json(from clock: String) -> JSONValue {
        [
            "from": .string(clock), "to": "CLOCK_MONOTONIC_RAW", "last_bracket_ns": .integer(latest?.bracketNs ?? 0),
            "offset_ns": .integer(latest?.offsetNs ?? 0), "drift_ppm": .double(driftPPM ?? 0),
            "clock_pairs": JSONValue(pairsUsed), "clock_pairs_refused": JSONValue(pairsRefused),
            "rate_changes": JSONValue(rateChanges), "steps": JSONValue(steps),
            "worst_uncertainty": [
                "ns": .integer(worstUncertaintyNs), "monotonic_raw_ns": .integer(worstUncertaintyAtRawNs),
            ],
        ]
    }
}

extension DropCounter {
    /// The count and the runs of sequence numbers, as the sidecar writes them; with
    /// `records_truncated` when the table filled (its last run spans all the rest).
    public var json: JSONValue {
        var entry: [String: JSONValue] = [
            "count": JSONValue(count),
            "records": .array(droppedRuns.map { [.unsigned($0.lowerBound), .unsigned($0.upperBound)] }),
        ]
        if runsTruncated { entry["records_truncated"] = true }
        return .object(entry)
    }
}
