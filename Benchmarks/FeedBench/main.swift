// FeedBench: the in-process side of Benchmarks/feed-vs-sdk: the record a feed benchmark's
// program sends, through the SyncField library's record() in this process, flat out from one
// thread for S seconds, until stop() has written and closed everything.
//
//   swift build -c release --product FeedBench
//   .build/release/FeedBench --seconds 5 --out DIR
//
// Prints one JSON line: calls, seconds (to the end of stop()), cpu_seconds (this process's user
// and system time over the same span, from getrusage).
import Foundation
import SyncField

var seconds = 5.0
var directory = NSTemporaryDirectory() + "/feed-bench-\(getpid())"
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--out": directory = arguments.next() ?? directory
    default:
        FileHandle.standardError.write(Data("usage: FeedBench [--seconds S] [--out DIR]\n".utf8))
        exit(64)
    }
}

/// The benchmark's record: what Benchmarks/feed-vs-sdk/run.py's program sends for record `index`.
func record(_ index: Int) -> [String: Any] {
    let t = Double(index) * 1e-3
    return [
        "force": [sin(t), cos(t), 9.80665 + t], "torque": [0.01 * t, -0.02, 0.5 + t], "width": 0.04 + 1e-6 * t,
        "grip": ["closed": index & 1, "current": 1.25 + t] as [String: Any],
    ]
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let session = SyncSession(hostId: "bench", outputDir: directory)
try session.start()
let cpuBefore = cpuSeconds()
let started = MonotonicClock.now()
let deadline = started + UInt64(seconds * 1e9)
var calls = 0
while true {
    let channels = record(calls)
    try session.record("grip", frameNumber: calls, channels: channels, captureNs: MonotonicClock.now())
    calls += 1
    if calls & 255 == 0 && MonotonicClock.now() >= deadline { break }
}
try session.stop()
let elapsed = Double(MonotonicClock.now() - started) / 1e9
print(#"{"calls": \#(calls), "seconds": \#(elapsed), "cpu_seconds": \#(cpuSeconds() - cpuBefore)}"#)
try? FileManager.default.removeItem(atPath: directory)
