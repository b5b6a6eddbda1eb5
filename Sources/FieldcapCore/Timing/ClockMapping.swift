import Synchronization

/// Maps times of another host clock (CLOCK_MONOTONIC, CLOCK_REALTIME...) into
/// `CLOCK_MONOTONIC_RAW`, tracking the other clock's slewing.
///
/// A sampler thread (not the capture thread) calls `add(_:)` about once a second with a fresh
/// `ClockPairSample`. Between two samples the offset is interpolated; after the last one it is
/// extrapolated with the slope of the last two, i.e. the other clock's current frequency error
/// against RAW. A capture thread calls `toRaw(_:)` for each kernel timestamp: no lock, no
/// allocation, no system call; it reads the two most recent samples through a sequence lock and
/// retries in the rare case that a sample was being added at that moment.
///
/// Thread-safe: one thread adds, any threads map.
public final class ClockMapping: @unchecked Sendable {
    /// The two latest samples, as six words, guarded by `version` (odd while being written).
    private let version = Atomic<UInt64>(0)
    private let words: UnsafeMutablePointer<Atomic<Int64>>
    private var count = 0  // adder-bound

    /// Samples whose bracket is wider than this are ignored (a preempted read).
    public let maximumBracketNs: Int64

    /// A sample whose offset is further than this from where the mapping predicted it is a step
    /// of the other clock (`date -s`, `clock_settime`), not a slew: the kernel slews at most
    /// 500 ppm, 0.5 ms a second. The mapping restarts from that sample.
    public let stepThresholdNs: Int64
    /// Steps seen so far. Adder-bound.
    public private(set) var steps = 0

    public init(maximumBracketNs: Int64 = 20_000, stepThresholdNs: Int64 = 2_000_000) {
        self.maximumBracketNs = maximumBracketNs
        self.stepThresholdNs = stepThresholdNs
        words = .allocate(capacity: 6)
        for index in 0..<6 { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        words.deinitialize(count: 6)
        words.deallocate()
    }

    /// Adds a sample. Adder-bound. Returns false when it was too wide to use.
    @discardableResult
    public func add(_ sample: ClockPairSample) -> Bool {
        guard sample.bracketNs <= maximumBracketNs else { return false }
        var stepped = false
        if count > 0, let predicted = snapshot, abs(predicted.toRaw(sample.otherNs) - sample.rawNs) > stepThresholdNs {
            stepped = true
            steps += 1
        }
        let v = version.load(ordering: .relaxed)
        version.store(v + 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        // Shift the latest into "previous", then store the new one as "latest".
        for index in 0..<3 { words[index].store(words[index + 3].load(ordering: .relaxed), ordering: .relaxed) }
        words[3].store(sample.otherNs, ordering: .relaxed)
        words[4].store(sample.offsetNs, ordering: .relaxed)
        words[5].store(sample.bracketNs, ordering: .relaxed)
        if count < 2 { count += 1 }
        if stepped { count = 1 }
        if count == 1 {
            // With one sample, "previous" is the same sample: a constant offset until the next.
            for index in 0..<3 { words[index].store(words[index + 3].load(ordering: .relaxed), ordering: .relaxed) }
        }
        version.store(v + 2, ordering: .releasing)
        return true
    }

    /// The state a mapping uses: the two latest samples (other time, offset) and their brackets.
    public struct Snapshot: Sendable, Equatable {
        public var previousOtherNs: Int64
        public var previousOffsetNs: Int64
        public var latestOtherNs: Int64
        public var latestOffsetNs: Int64
        public var latestBracketNs: Int64
        public var previousBracketNs: Int64

        /// The other clock's rate error against RAW, in parts per million (RAW runs this much
        /// faster than the other clock).
        public var driftPPM: Double {
            let span = latestOtherNs - previousOtherNs
            return span == 0 ? 0 : Double(latestOffsetNs - previousOffsetNs) / Double(span) * 1e6
        }

        /// `otherNs` in RAW: interpolated between, or extrapolated beyond, the two samples.
        @inline(__always)
        public func toRaw(_ otherNs: Int64) -> Int64 {
            let span = latestOtherNs - previousOtherNs
            guard span > 0 else { return otherNs + latestOffsetNs }
            let slope = Double(latestOffsetNs - previousOffsetNs) / Double(span)
            let offset = Double(latestOffsetNs) + slope * Double(otherNs - latestOtherNs)
            return otherNs + Int64(offset.rounded())
        }

        /// How far `toRaw(otherNs)` can be from the truth while the other clock keeps the rate it
        /// had between the two samples: each sample's offset is known to half its bracket, and the
        /// slope through them to the sum of those halves over their span, which grows with the
        /// distance from the latest sample. A change of rate since the latest sample (an NTP
        /// daemon changing its mind) is not covered: it shows as drift in the next sample. With a
        /// single sample the rate is unknown and bounded by the kernel's limit, 500 ppm.
        public func uncertaintyNs(at otherNs: Int64) -> Int64 {
            let latestHalf = (latestBracketNs + 1) / 2
            let span = latestOtherNs - previousOtherNs
            // One sample gives no rate: the kernel lets NTP slew a clock by at most 500 ppm.
            guard span > 0 else { return latestHalf + (abs(otherNs - latestOtherNs) + 1_999) / 2_000 }
            let slopeError = Double(previousBracketNs + latestBracketNs) / 2 / Double(span)
            return latestHalf + Int64((slopeError * Double(abs(otherNs - latestOtherNs))).rounded(.up))
        }
    }

    /// The latest consistent snapshot, or nil before the first sample. Any thread; lock-free.
    @inline(__always)
    public var snapshot: Snapshot? {
        while true {
            let before = version.load(ordering: .acquiring)
            if before == 0 { return nil }
            if before & 1 == 1 { continue }
            let values = (
                words[0].load(ordering: .relaxed), words[1].load(ordering: .relaxed), words[3].load(ordering: .relaxed),
                words[4].load(ordering: .relaxed), words[5].load(ordering: .relaxed), words[2].load(ordering: .relaxed))
            atomicMemoryFence(ordering: .acquiring)
            if version.load(ordering: .relaxed) == before {
                return Snapshot(
                    previousOtherNs: values.0, previousOffsetNs: values.1, latestOtherNs: values.2,
                    latestOffsetNs: values.3, latestBracketNs: values.4, previousBracketNs: values.5)
            }
        }
    }

    /// `otherNs` in `CLOCK_MONOTONIC_RAW`, or nil before the first sample.
    @inline(__always)
    public func toRaw(_ otherNs: Int64) -> Int64? { snapshot?.toRaw(otherNs) }
}
