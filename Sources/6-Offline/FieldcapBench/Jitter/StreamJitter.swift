import FieldcapCore
import Histogram

/// How one stream's timestamps behave, gathered record by record on the writer thread: the
/// interval error (interval minus the nominal period) of the dequeue times and of the capture
/// times (the mapped kernel times where the source has them), and the dequeue latency (dequeue
/// minus capture).
///
/// Percentiles come from HdrHistograms of the absolute values (3 significant digits); the
/// signed extremes are kept exactly. Intervals that span a lost record (a sequence jump) are
/// not counted. A bounded time series of the interval errors is kept for plotting: when it
/// fills up, every other point is dropped and from then on every other record is kept, so
/// memory stays fixed however long the run.
///
/// Writer-thread-bound while recording; read it after the recorder stopped.
public struct StreamJitter {
    public struct Point: Sendable, Equatable {
        /// Seconds since the stream's first record.
        public var seconds: Double
        public var dequeueErrorNs: Int64
        public var captureErrorNs: Int64
    }

    /// Percentiles and the maximum of the absolute value, and the signed extremes, in ns.
    public struct Summary: Sendable, Equatable {
        public var count: Int
        /// The signed extremes.
        public var minNs: Int64
        public var maxNs: Int64
        /// Of the absolute value: the percentiles (3 significant digits) and the exact maximum.
        public var medianNs: Int64
        public var p99Ns: Int64
        public var p999Ns: Int64
        public var maxAbsNs: Int64 { Int64(clamping: max(minNs.magnitude, maxNs.magnitude)) }
    }

    public let id: String
    public let periodNs: Double
    public private(set) var records = 0
    /// Records the source skipped (jumps in its sequence numbers), beside the ring's drops.
    public private(set) var sequenceGaps = 0
    /// Times the sequence went back or repeated (the driver restarted its count).
    public private(set) var sequenceRestarts = 0
    /// Records whose dequeue time came before their capture time.
    public private(set) var negativeLatencies = 0
    public private(set) var series: [Point] = []

    private var dequeueError: SignedRecorder
    private var captureError: SignedRecorder
    private var latency: SignedRecorder
    private var firstCaptureNs: UInt64 = 0
    private var previous: CaptureRecord?
    private let seriesCapacity: Int
    private var keepEvery = 1
    private var sinceKept = 0

    public init(id: String, nominalRate: Double, seriesCapacity: Int = 4000) {
        self.id = id
        periodNs = nominalRate > 0 ? 1e9 / nominalRate : 0
        self.seriesCapacity = max(2, seriesCapacity)
        dequeueError = SignedRecorder()
        captureError = SignedRecorder()
        latency = SignedRecorder()
        series.reserveCapacity(self.seriesCapacity)
    }

    public mutating func add(_ record: CaptureRecord) {
        records += 1
        let lag = Int64(bitPattern: record.dequeueNs &- record.captureNs)
        if lag < 0 { negativeLatencies += 1 }
        latency.record(lag)
        defer { previous = record }
        guard let previous else {
            firstCaptureNs = record.captureNs
            return
        }
        if record.sequence != previous.sequence &+ 1 {
            // A sequence that goes back or repeats (a driver restarting its count) is no gap and
            // no interval; only a forward jump counts what it skipped.
            if record.sequence > previous.sequence {
                sequenceGaps += Int(clamping: record.sequence - previous.sequence - 1)
            } else {
                sequenceRestarts += 1
            }
            return
        }
        guard periodNs > 0 else { return }
        let dequeued = Int64(bitPattern: record.dequeueNs &- previous.dequeueNs) - Int64(periodNs.rounded())
        let captured = Int64(bitPattern: record.captureNs &- previous.captureNs) - Int64(periodNs.rounded())
        dequeueError.record(dequeued)
        captureError.record(captured)
        keep(
            Point(
                seconds: Double(record.captureNs &- firstCaptureNs) / 1e9, dequeueErrorNs: dequeued,
                captureErrorNs: captured))
    }

    private mutating func keep(_ point: Point) {
        sinceKept += 1
        guard sinceKept >= keepEvery else { return }
        sinceKept = 0
        if series.count == seriesCapacity {
            // In place: keep the even-indexed points, and from now on half as many.
            for index in 0..<(seriesCapacity / 2) { series[index] = series[index * 2] }
            series.removeLast(seriesCapacity - seriesCapacity / 2)
            keepEvery *= 2
        }
        series.append(point)
    }

    public var dequeueIntervalError: Summary { dequeueError.summary }
    public var captureIntervalError: Summary { captureError.summary }
    public var dequeueLatency: Summary { latency.summary }

    /// The absolute interval errors in logarithmic buckets (upper bound ns, dequeue count,
    /// capture count), for a histogram plot.
    public func intervalErrorBuckets(
        firstBucketNs: UInt64 = 1_000, base: Double = 2
    ) -> [(upperNs: UInt64, dequeue: UInt64, capture: UInt64)] {
        let dequeue = dequeueError.buckets(firstBucketNs: firstBucketNs, base: base)
        let capture = captureError.buckets(firstBucketNs: firstBucketNs, base: base)
        return (0..<max(dequeue.count, capture.count)).map { index in
            let upper = index < dequeue.count ? dequeue[index].upperNs : capture[index].upperNs
            return (
                upper, index < dequeue.count ? dequeue[index].count : 0,
                index < capture.count ? capture[index].count : 0
            )
        }
    }
}

/// Signed values into an HdrHistogram of their absolute values, with exact signed extremes.
private struct SignedRecorder {
    /// Up to 100 s, 3 significant digits.
    var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 100_000_000_000, numberOfSignificantValueDigits: .three)
    var minimum = Int64.max
    var maximum = Int64.min

    mutating func record(_ value: Int64) {
        minimum = min(minimum, value)
        maximum = max(maximum, value)
        _ = histogram.record(min(value.magnitude, 100_000_000_000))
    }

    var summary: StreamJitter.Summary {
        let count = Int(histogram.totalCount)
        guard count > 0 else {
            return StreamJitter.Summary(count: 0, minNs: 0, maxNs: 0, medianNs: 0, p99Ns: 0, p999Ns: 0)
        }
        // The histogram keeps 3 significant digits; no percentile can exceed the exact maximum.
        let exact = Int64(clamping: max(minimum.magnitude, maximum.magnitude))
        return StreamJitter.Summary(
            count: count, minNs: minimum, maxNs: maximum, medianNs: min(exact, Int64(histogram.valueAtPercentile(50))),
            p99Ns: min(exact, Int64(histogram.valueAtPercentile(99))),
            p999Ns: min(exact, Int64(histogram.valueAtPercentile(99.9))))
    }

    func buckets(firstBucketNs: UInt64, base: Double) -> [(upperNs: UInt64, count: UInt64)] {
        guard histogram.totalCount > 0 else { return [] }
        return histogram.logarithmicBucketValues(valueUnitsInFirstBucket: firstBucketNs, logBase: base).map {
            ($0.value, $0.countAddedInThisIterationStep)
        }
    }
}
