import FieldcapSystem
import Glibc
import SyncField

/// Sleeping until an instant of the wall clock (CLOCK_REALTIME, absolute): the fleet's shared
/// start, by this rig's own disciplined clock.
public enum WallClock {
    /// Blocks the calling thread until the wall clock reads `ns` (at once if it has passed).
    public static func sleep(untilNs ns: UInt64) {
        var target = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        _ = SystemCall.retryingInterruptedCode { clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &target, nil) }
    }

    /// The same from async code, on a thread of its own (not one of the pool's).
    public static func sleep(untilNs ns: UInt64) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            detachThread(named: "fc-fleet-wait") {
                sleep(untilNs: ns)
                done.resume()
            }
        }
    }
}
