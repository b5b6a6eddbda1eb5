// SyncFieldBench: fieldcap's SyncField writer against the SDK's own strategy, side by side in
// one run, on the same machine and disk.
//
//   swift run -c release SyncFieldBench [--seconds S] [--out DIR] [--json FILE]
//
// Each scenario calls record() with a 6-channel IMU record as fast as it can from 1 or 4
// threads (each thread its own stream) for S seconds, then stops the session. Reported:
// calls/s and lines/s end to end (until everything is written and closed; each call writes a
// timestamp line and a sensor line), and the caller's latency per call (p50, p99, p99.9, max)
// from an HdrHistogram, measured with CLOCK_MONOTONIC_RAW around each call.
import Foundation
import Histogram
import SyncField

struct Options {
    var seconds = 3.0
    var directory = NSTemporaryDirectory() + "/syncfield-bench-\(getpid())"
    var jsonPath: String?
    /// Calls per second per thread in the latency scenarios.
    var rate = 10_000.0

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--seconds": seconds = Double(iterator.next() ?? "") ?? seconds
            case "--out": directory = iterator.next() ?? directory
            case "--json": jsonPath = iterator.next()
            case "--rate": rate = Double(iterator.next() ?? "") ?? rate
            case "-h", "--help":
                print("usage: SyncFieldBench [--seconds S] [--rate CALLS_PER_S_PER_THREAD] [--out DIR] [--json FILE]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("SyncFieldBench: unknown argument \(argument); see --help\n".utf8))
                exit(64)
            }
        }
    }
}

/// One call of the system under test, from thread `thread`, frame `frame`. It prepares its
/// arguments (the channels dictionary), reads the clock right before calling `record`, and
/// returns that reading, so the latency measured is the call's alone.
typealias Call = @Sendable (_ thread: Int, _ frame: Int) throws -> UInt64

struct Result {
    var name: String
    var threads: Int
    var calls: Int
    var seconds: Double
    var latency: Histogram<UInt64>
    var callsPerSecond: Double { Double(calls) / seconds }
    var linesPerSecond: Double { 2 * callsPerSecond }
}

/// Per-thread measurement state, touched only by its own thread until joined.
final class ThreadTally: @unchecked Sendable {
    var calls = 0
    var latency = Histogram<UInt64>(
        lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}

/// Runs `call` from `threads` threads for `seconds`: flat out when `rate` is nil (throughput),
/// or paced at `rate` calls per second per thread, sleeping between calls as a capture thread
/// sleeps between frames (latency without queueing behind a saturated writer).
func measure(
    name: String, threads: Int, seconds: Double, rate: Double? = nil, call: @escaping Call, finish: () throws -> Void
) throws -> Result {
    let tallies = (0..<threads).map { _ in ThreadTally() }
    let deadline = MonotonicClock.now() + UInt64(seconds * 1e9)
    let period = rate.map { UInt64(1e9 / $0) }
    let group = DispatchGroup()
    let started = MonotonicClock.now()
    for thread in 0..<threads {
        let tally = tallies[thread]
        group.enter()
        Thread {
            var frame = 0
            // clock_nanosleep cannot sleep on CLOCK_MONOTONIC_RAW; pace on CLOCK_MONOTONIC.
            var next = MonotonicClock.read(CLOCK_MONOTONIC)
            while true {
                if let period {
                    next += period
                    var wake = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR {}
                }
                let before = try! call(thread, frame)
                let after = MonotonicClock.now()
                _ = tally.latency.record(after - before)
                frame += 1
                if (period != nil || frame & 255 == 0) && after >= deadline { break }
            }
            tally.calls = frame
            group.leave()
        }.start()
    }
    group.wait()
    try finish()
    let elapsed = Double(MonotonicClock.now() - started) / 1e9
    var latency = tallies[0].latency
    for tally in tallies.dropFirst() { latency.add(tally.latency) }
    return Result(
        name: name, threads: threads, calls: tallies.reduce(0) { $0 + $1.calls }, seconds: elapsed, latency: latency)
}

let options = Options(CommandLine.arguments)
let channelNames = ["accel_x", "accel_y", "accel_z", "gyro_x", "gyro_y", "gyro_z"]
func channels(_ frame: Int) -> [String: Any] {
    let t = Double(frame) * 1e-3
    return [
        "accel_x": sin(t), "accel_y": cos(t), "accel_z": -9.80665 + 1e-3 * t, "gyro_x": 0.01 * t, "gyro_y": -0.02,
        "gyro_z": 0.5 + t,
    ]
}

/// The three writers, each fresh for one scenario.
func scenarios(threads: Int, seconds: Double, rate: Double?, directory: String) throws -> [Result] {
    var results: [Result] = []
    let ids = (0..<threads).map { "imu\($0)" }
    let sdk = SDKStrategyWriter(hostId: "bench", directory: directory + "-sdk")
    results.append(
        try measure(
            name: "SDK strategy (lock + JSONSerialization + write per line)", threads: threads, seconds: seconds,
            rate: rate,
            call: { thread, frame in
                let record = channels(frame)
                let start = MonotonicClock.now()
                try sdk.record(ids[thread], frameNumber: frame, channels: record)
                return start
            },
            finish: { try sdk.close() }))

    let session = SyncSession(hostId: "bench", outputDir: directory + "-dict")
    try session.start()
    results.append(
        try measure(
            name: "fieldcap SyncSession.record(channels:)", threads: threads, seconds: seconds, rate: rate,
            call: { thread, frame in
                let record = channels(frame)
                let start = MonotonicClock.now()
                try session.record(ids[thread], frameNumber: frame, channels: record)
                return start
            },
            finish: { try session.stop() }))

    let fixedSession = SyncSession(hostId: "bench", outputDir: directory + "-fixed")
    try fixedSession.start()
    let streams = try ids.map { try fixedSession.sensorStream($0, channels: channelNames) }
    let buffers = (0..<threads).map { _ in ThreadValues() }
    results.append(
        try measure(
            name: "fieldcap SensorStream.record(values:)", threads: threads, seconds: seconds, rate: rate,
            call: { thread, frame in
                let t = Double(frame) * 1e-3
                let values = buffers[thread]
                values.storage[0] = sin(t); values.storage[1] = cos(t); values.storage[2] = -9.80665 + 1e-3 * t
                values.storage[3] = 0.01 * t; values.storage[4] = -0.02; values.storage[5] = 0.5 + t
                let start = MonotonicClock.now()
                try streams[thread].record(frameNumber: frame, values: values.storage)
                return start
            },
            finish: { try fixedSession.stop() }))
    return results
}

var throughput: [Result] = []
var latency: [Result] = []
for threads in [1, 4] {
    throughput += try scenarios(
        threads: threads, seconds: options.seconds, rate: nil, directory: "\(options.directory)/flat\(threads)")
    latency += try scenarios(
        threads: threads, seconds: options.seconds, rate: options.rate,
        directory: "\(options.directory)/paced\(threads)")
}

final class ThreadValues: @unchecked Sendable { var storage = [Double](repeating: 0, count: 6) }

func format(_ ns: UInt64) -> String {
    ns < 10_000
        ? "\(ns) ns"
        : ns < 10_000_000 ? String(format: "%.1f µs", Double(ns) / 1e3) : String(format: "%.1f ms", Double(ns) / 1e6)
}

func row(_ result: Result, among results: [Result]) -> String {
    let baseline = results.first { $0.threads == result.threads && $0.name.hasPrefix("SDK") }!
    return String(
        format: "| %d | %@ | %.0f | %.0f | %.1fx | %@ | %@ | %@ | %@ |",
        result.threads, result.name, result.callsPerSecond, result.linesPerSecond,
        result.callsPerSecond / baseline.callsPerSecond,
        format(result.latency.valueAtPercentile(50)), format(result.latency.valueAtPercentile(99)),
        format(result.latency.valueAtPercentile(99.9)), format(result.latency.max))
}
let header = """
    | threads | writer | calls/s | lines/s | vs SDK | p50 | p99 | p99.9 | max |
    |---:|---|---:|---:|---:|---:|---:|---:|---:|
    """

print(
    "SyncField writer benchmark: \(ProcessInfo.processInfo.activeProcessorCount) "
        + "cores, \(options.seconds) s per scenario"
)
print("")
print(
    "Throughput: each thread calls record() flat out; calls/s counted until stop() has written and closed everything.")
print("")
print(header)
for result in throughput { print(row(result, among: throughput)) }
print("")
print(
    "Caller latency: each thread calls record() \(Int(options.rate)) "
        + "times a second, sleeping between calls as a capture thread does."
)
print("")
print(
    """
    | threads | writer | p50 | p99 | p99.9 | max | SDK p99 / this p99 |
    |---:|---|---:|---:|---:|---:|---:|
    """)
for result in latency {
    let baseline = latency.first { $0.threads == result.threads && $0.name.hasPrefix("SDK") }!
    print(
        String(
            format: "| %d | %@ | %@ | %@ | %@ | %@ | %.0fx |", result.threads, result.name,
            format(result.latency.valueAtPercentile(50)), format(result.latency.valueAtPercentile(99)),
            format(result.latency.valueAtPercentile(99.9)), format(result.latency.max),
            Double(baseline.latency.valueAtPercentile(99)) / Double(max(1, result.latency.valueAtPercentile(99)))))
}

if let jsonPath = options.jsonPath {
    func rows(_ results: [Result]) -> [[String: Any]] {
        results.map { result in
            [
                "writer": result.name, "threads": result.threads, "calls": result.calls, "seconds": result.seconds,
                "calls_per_second": result.callsPerSecond, "lines_per_second": result.linesPerSecond,
                "latency_ns": [
                    "p50": result.latency.valueAtPercentile(50), "p99": result.latency.valueAtPercentile(99),
                    "p99_9": result.latency.valueAtPercentile(99.9), "max": result.latency.max,
                ],
            ]
        }
    }
    let document: [String: Any] = [
        "throughput": rows(throughput), "latency": rows(latency), "rate_per_thread": options.rate,
    ]
    let data = try JSONSerialization.data(withJSONObject: document, options: [.prettyPrinted, .sortedKeys])
    _ = FileManager.default.createFile(atPath: jsonPath, contents: data)
}
try? FileManager.default.removeItem(atPath: options.directory)
