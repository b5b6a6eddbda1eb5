import FieldcapCore
import Testing

@testable import FieldcapBench

@Suite("Jitter statistics")
struct StreamJitterTests {
    private func record(_ sequence: UInt64, capture: UInt64, dequeue: UInt64) -> CaptureRecord {
        var record = CaptureRecord()
        record.sequence = sequence
        record.captureNs = capture
        record.dequeueNs = dequeue
        return record
    }

    @Test("interval errors against the nominal period, signed extremes, latency, and intervals across a gap left out")
    func knownIntervals() {
        var jitter = StreamJitter(id: "cam", nominalRate: 100)  // 10 ms
        // Capture times every 10 ms except one 10.5 ms and one 9.8 ms interval; dequeue 300 µs late,
        // except one dequeue 2 ms late. Record 5 is missing (a gap the statistics skip).
        let captures: [UInt64] = [0, 10_000_000, 20_500_000, 30_300_000, 40_300_000, 60_300_000]
        let sequences: [UInt64] = [0, 1, 2, 3, 4, 6]
        for (index, capture) in captures.enumerated() {
            let late: UInt64 = index == 3 ? 2_000_000 : 300_000
            jitter.add(
                record(sequences[index], capture: capture + 1_000_000_000, dequeue: capture + 1_000_000_000 + late))
        }
        #expect(jitter.records == 6)
        #expect(jitter.sequenceGaps == 1)
        let capture = jitter.captureIntervalError
        #expect(capture.count == 4)  // the interval across the gap is not counted
        #expect(capture.minNs == -200_000)
        #expect(capture.maxNs == 500_000)
        let dequeue = jitter.dequeueIntervalError
        #expect(dequeue.minNs == -1_700_000)  // dequeued at 32.3 ms, then 40.6 ms
        #expect(dequeue.maxNs == 1_500_000)
        let latency = jitter.dequeueLatency
        #expect(latency.count == 6)
        #expect(latency.minNs == 300_000 && latency.maxNs == 2_000_000)
        #expect(abs(latency.medianNs - 300_000) <= 300)  // 3 significant digits
        #expect(jitter.series.count == 4)
        #expect(jitter.series.map(\.captureErrorNs) == [0, 500_000, -200_000, 0])
    }

    @Test("a sequence that goes back or repeats is counted as a restart, not a gap, and measures no interval")
    func sequenceGoingBack() {
        var jitter = StreamJitter(id: "cam", nominalRate: 100)
        jitter.add(record(10, capture: 1_000_000_000, dequeue: 1_000_100_000))
        jitter.add(record(11, capture: 1_010_000_000, dequeue: 1_010_100_000))
        jitter.add(record(0, capture: 1_020_000_000, dequeue: 1_020_100_000))  // the driver restarted
        jitter.add(record(0, capture: 1_030_000_000, dequeue: 1_030_100_000))  // and repeated
        jitter.add(record(1, capture: 1_040_000_000, dequeue: 1_040_100_000))
        jitter.add(record(5, capture: 1_080_000_000, dequeue: 1_080_100_000))  // skipped 2, 3, 4
        #expect(jitter.records == 6)
        #expect(jitter.sequenceRestarts == 2)
        #expect(jitter.sequenceGaps == 3)
        #expect(jitter.captureIntervalError.count == 2, "11 after 10 and 1 after 0 only")
    }

    @Test("the plotted series stays within its capacity, evenly thinned, however long the run")
    func boundedSeries() {
        var jitter = StreamJitter(id: "imu", nominalRate: 1000, seriesCapacity: 100)
        for index in 0..<10_000 as Range<UInt64> {
            jitter.add(record(index, capture: index * 1_000_000, dequeue: index * 1_000_000 + 50_000))
        }
        #expect(jitter.series.count <= 100)
        #expect(jitter.series.count >= 50)
        let times = jitter.series.map(\.seconds)
        #expect(times.first! < 0.2 && times.last! > 9.5)
        let steps = zip(times, times.dropFirst()).map { $1 - $0 }
        #expect(steps.max()! <= 2.01 * steps.min()!)
        #expect(jitter.captureIntervalError.count == 9_999)
    }

    @Test("every column of a row is the same kind of statistic: no percentile of |error| above its maximum")
    func percentilesBelowMaximum() {
        var jitter = StreamJitter(id: "imu", nominalRate: 1000)  // 1 ms
        // Intervals 1 ms + 100_123 ns, whose histogram bucket (3 significant digits) reads high.
        for index in 0..<1000 {
            let capture = UInt64(index) * 1_100_123 + 1_000_000_000
            jitter.add(record(UInt64(index), capture: capture, dequeue: capture + 50_000))
        }
        let capture = jitter.captureIntervalError
        #expect(capture.maxAbsNs == 100_123)
        #expect(
            capture.medianNs <= capture.maxAbsNs && capture.p99Ns <= capture.maxAbsNs
                && capture.p999Ns <= capture.maxAbsNs)
        #expect(capture.p999Ns == 100_123)
        // The signed extremes are kept beside them.
        #expect(capture.minNs == 100_123 && capture.maxNs == 100_123)
    }
}
