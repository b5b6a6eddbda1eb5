import FieldcapCore

/// What happens to a sample once its time is known: times are kept increasing, gaps in the timeline count the samples they miss, and the
/// record goes into the ring with its sequence number. Capture-thread-bound; plain data.
struct SampleEmitter {
    var periodNs = 0.0
    var dropCounter: DropCounter?
    private(set) var sequence: UInt64 = 0
    private(set) var lastCaptureNs: Int64 = 0
    /// Gaps seen (each may miss several samples).
    private(set) var gapEvents = 0
    /// Samples whose time was not after the previous one's (moved just past it, counted).
    private(set) var nonIncreasingTimes = 0

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
            } else if Double(capture - last) > 1.5 * periodNs {
                let missing = Int((Double(capture - last) / periodNs).rounded()) - 1
                if missing > 0 {
                    gapEvents += 1
                    dropCounter?.record(from: sequence, count: min(missing, 1_000_000))
                    sequence += UInt64(missing)
                }
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
}
