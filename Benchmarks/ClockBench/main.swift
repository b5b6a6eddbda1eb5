// ClockBench: what mapping a kernel timestamp into CLOCK_MONOTONIC_RAW costs a capture thread per
// frame, before and after the clock pair at every dequeue (Benchmarks/clock-cost runs it natively
// and under callgrind, side by side).
//
//   swift run -c release ClockBench MODE [FRAMES]
//
// MODE: `none` (the dequeue time alone: the baseline every mode includes), `periodic` (before: a
// mapping from pairs read once a second elsewhere, applied to the kernel time with its bound),
// `tracker` (after: a chained pair of three brackets read at the dequeue, added to a
// ClockTracker, the kernel time mapped). Prints "MODE ns_per_frame FRAMES".
import FieldcapBench
import FieldcapCore
import Foundation
import SyncField

let arguments = CommandLine.arguments
let mode = arguments.count > 1 ? arguments[1] : "tracker"
let frames = arguments.count > 2 ? Int(arguments[2])! : 1_000_000
guard ["none", "periodic", "tracker"].contains(mode) else {
    FileHandle.standardError.write(Data("ClockBench: MODE must be none, periodic or tracker\n".utf8))
    exit(64)
}

var periodic = PeriodicClockPairs()
periodic.add(ClockPairReader.host(CLOCK_MONOTONIC).sample())
usleep(10_000)
periodic.add(ClockPairReader.host(CLOCK_MONOTONIC).sample())
var tracker = ClockTracker()
tracker.add(ClockPairReader.hostSample(CLOCK_MONOTONIC, after: Int64(MonotonicClock.now())))

// A kernel timestamp a millisecond before each dequeue, as a camera's start of exposure is.
var sink: Int64 = 0
let start = MonotonicClock.now()
for _ in 0..<frames {
    let dequeued = MonotonicClock.now()
    let kernel = Int64(MonotonicClock.read(CLOCK_MONOTONIC)) - 1_000_000
    switch mode {
    case "periodic":
        sink &+= periodic.toRaw(kernel)! &+ periodic.uncertaintyNs(at: kernel)!
    case "tracker":
        tracker.add(ClockPairReader.hostSample(CLOCK_MONOTONIC, after: Int64(dequeued), burst: 3))
        if case .mapped(let mapped)? = tracker.map(kernel) { sink &+= mapped.rawNs &+ mapped.uncertaintyNs }
    default:
        sink &+= Int64(dequeued) &+ kernel
    }
}
let elapsed = MonotonicClock.now() - start
print("\(mode) \(String(format: "%.1f", Double(elapsed) / Double(frames))) \(frames) \(sink & 1)")
