import FieldcapCore

/// What happens to a sample once its time is known: times are kept increasing, gaps in the timeline
/// count the samples they miss, and the record goes into the ring with its sequence number.
/// Capture-thread-bound; plain data.
///
/// A gap is judged by the timeline, not by one interval: a trigger tick that comes late is often
/// followed by one that comes early (an hrtimer that fired late stays on its grid), so the interval
/// before a late sample looks like a loss that the bunched samples after it fill again. A gap opens
/// a window at the last sample on time; the window closes at the next interval of about one period
/// that lands on the grid the window started on (or after `windowLimit` samples, or at the end),
/// and only then are the periods the window spans, less the samples that came in it, counted as
/// missing. Samples reported missing thus never exceed what the timeline has room for.
struct SampleEmitter {
    var periodNs = 0.0
    var dropCounter: DropCounter?
    private(set) var sequence: UInt64 = 0
    private(set) var lastCaptureNs: Int64 = 0
    /// Gaps seen that missed samples (each may miss several).
    private(set) var gapEvents = 0
    /// Samples whose time was not after the previous one's (moved just past it, counted).
    private(set) var nonIncreasingTimes = 0
    /// The open window: the time of the last sample before the gap, and the samples since it.
    private var windowStartNs: UInt64 = 0
    private var samplesInWindow = 0
    /// A window still open after this many samples is settled at once: a device that keeps
    /// coming early (a rate above the one asked) never closes it the usual way.
    static let windowLimit = 64

    init() {}

    init(periodNs: Double, dropCounter: DropCounter) {
        self.periodNs = periodNs
        self.dropCounter = dropCounter
    }

    @inline(__always)
    mutating func emit(
        _ sample: CaptureRecord, captureNs: Int64, uncertaintyNs: Int64, into ring: SPSCRing<CaptureRecord>
    ) {
        var capture = UInt64(max(1, captureNs))
        if lastCaptureNs != 0 {
            let last = UInt64(lastCaptureNs)
            if capture <= last {
                capture = last + 1
                nonIncreasingTimes += 1
            }
            let interval = Double(capture - last)
            if samplesInWindow > 0 {
                samplesInWindow += 1
                if (interval >= 0.5 * periodNs && interval <= 1.5 * periodNs && onGrid(capture))
                    || samplesInWindow >= Self.windowLimit
                {
                    settleWindow(endingAt: capture)
                }
            } else if interval > 1.5 * periodNs {
                windowStartNs = last
                samplesInWindow = 1
            }
        }
        lastCaptureNs = Int64(capture)
        var record = sample
        record.sequence = sequence
        record.captureNs = capture
        record.uncertaintyNs = UInt64(max(0, uncertaintyNs))
        ring.push(record, sequence: sequence)
        sequence += 1
    }

    /// Starts a new timeline where the sequence numbers run on: the device came back after an
    /// unplug, its samples restart on a grid of their own, and the time it was away is told as
    /// an absence, not as samples missing from the timeline.
    mutating func startTimeline() {
        lastCaptureNs = 0
        samplesInWindow = 0
        windowStartNs = 0
    }

    /// Settles the open window at the end of the stream (the last samples came after a gap).
    mutating func finish() {
        guard samplesInWindow > 0 else { return }
        // The last sample stands in for the interval that would have closed the window: its own
        // slot was taken, so the sequence numbers of the missing ones come after it.
        let missing = missingInWindow(endingAt: UInt64(lastCaptureNs))
        samplesInWindow = 0
        if missing > 0 {
            gapEvents += 1
            dropCounter?.record(from: sequence, count: missing)
            sequence += UInt64(missing)
        }
    }

    /// Counts what the window misses, numbered just before the sample that closes it.
    @inline(__always)
    private mutating func settleWindow(endingAt captureNs: UInt64) {
        let missing = missingInWindow(endingAt: captureNs)
        samplesInWindow = 0
        guard missing > 0 else { return }
        gapEvents += 1
        dropCounter?.record(from: sequence, count: missing)
        sequence += UInt64(missing)
    }

    /// Whether `captureNs` falls within a quarter period of the window start's grid: a sample
    /// that is itself late (the last of a bunch) would round the window's periods up.
    @inline(__always)
    private func onGrid(_ captureNs: UInt64) -> Bool {
        let periods = Double(captureNs &- windowStartNs) / periodNs
        return abs(periods - periods.rounded()) <= 0.25
    }

    /// The periods from the window's start to `captureNs`, less the samples that came in them.
    @inline(__always)
    private func missingInWindow(endingAt captureNs: UInt64) -> Int {
        let periods = (Double(captureNs &- windowStartNs) / periodNs).rounded()
        return Int(max(0, min(periods - Double(samplesInWindow), 1_000_000)))
    }
}
