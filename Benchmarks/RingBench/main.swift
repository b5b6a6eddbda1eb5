// RingBench: fieldcap's SPSC ring with 64-byte records, measured the same way as
// boost_spsc.cpp measures boost::lockfree::spsc_queue (run both with ring-vs-boost).
//
//   swift run -c release RingBench [RECORDS] [CAPACITY] [ROUND_TRIPS]
//
// Prints two lines: "throughput RECORDS_PER_SECOND" (best of 3) and
// "roundtrip NANOSECONDS" (mean of a ping-pong over two rings).
import FieldcapCore
import Foundation

struct Record64: BitwiseCopyable {
    var sequence: UInt64
    var payload: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    init(_ sequence: UInt64) { self.sequence = sequence }
}

let arguments = CommandLine.arguments
let records = arguments.count > 1 ? UInt64(arguments[1])! : 50_000_000
let capacity = arguments.count > 2 ? Int(arguments[2])! : 4096
let roundTrips = arguments.count > 3 ? Int(arguments[3])! : 1_000_000
precondition(MemoryLayout<Record64>.size == 64)

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func throughput() -> Double {
    let ring = SPSCRing<Record64>(minimumCapacity: capacity)
    let done = DispatchSemaphore(value: 0)
    let start = now()
    Thread {
        var sequence: UInt64 = 0
        while sequence < records {
            if ring.tryPush(Record64(sequence)) { sequence += 1 }
        }
        done.signal()
    }.start()
    var expected: UInt64 = 0
    var checksum: UInt64 = 0
    while expected < records {
        ring.consume(limit: 256) { run in
            for record in run { checksum &+= record.sequence }
            expected += UInt64(run.count)
        }
    }
    let elapsed = now() - start
    done.wait()
    precondition(checksum == records * (records - 1) / 2, "records lost or reordered")
    return Double(records) / (Double(elapsed) / 1e9)
}

func roundTrip() -> Double {
    let ping = SPSCRing<Record64>(minimumCapacity: capacity)
    let pong = SPSCRing<Record64>(minimumCapacity: capacity)
    let done = DispatchSemaphore(value: 0)
    Thread {
        for _ in 0..<roundTrips {
            var record: Record64?
            repeat { record = ping.pop() } while record == nil
            while !pong.tryPush(record!) {}
        }
        done.signal()
    }.start()
    let start = now()
    for index in 0..<roundTrips {
        while !ping.tryPush(Record64(UInt64(index))) {}
        var reply: Record64?
        repeat { reply = pong.pop() } while reply == nil
        precondition(reply!.sequence == UInt64(index))
    }
    let elapsed = now() - start
    done.wait()
    return Double(elapsed) / Double(roundTrips)
}

let best = (0..<3).map { _ in throughput() }.max()!
print("throughput \(Int(best))")
print("roundtrip \(Int(roundTrip()))")
