import FieldcapSystem
import SyncField
import Synchronization

/// Bounds the stop of a recording whose disk stopped answering: a network share that went away
/// (NFS and CIFS hard mounts wait for their server for ever; soft ones give up an operation at a
/// time, which at stop is a minute of timeouts), a card that hangs. A stop normally takes well
/// under a second: it writes the last batches, the trailers and the sidecar. Once it has run
/// `limitSeconds` on a disk seen stalling (an operation of `DiskStalls.stallNs` or longer during
/// the stop) or after a write already failed, `giveUp` is called with why; the front end exits
/// there. What reached the disk stays, synced once a second, and `fieldcap recover` finishes the
/// session when the disk is back. On a disk that answers, the stop is cut short only past three
/// times the limit (a minute by default), where it may wait in a call that is not timed.
///
/// Thread-bound: made and finished by the thread that stops the recording; its own thread
/// watches, and calls `giveUp` from there.
public final class StopWatchdog {
    public static let defaultLimitSeconds = 20.0

    private let done = Latch()
    /// Set once: by `finished` (the stop ended) or by the watcher (it gives up), whichever comes
    /// first, so a stop that ends as the limit passes is not reported as given up.
    private let settled = Once()

    /// Claimed once, by whichever side comes first.
    private final class Once: Sendable {
        private let taken = Mutex(false)
        /// True for the first caller only.
        func claim() -> Bool {
            taken.withLock { taken in
                defer { taken = true }
                return !taken
            }
        }
    }
    private var thread: DedicatedThread?

    /// Starts watching a stop that begins now. `writeFailed`: the recording stops because a
    /// write failed, so the disk is suspect from the start.
    public init(
        diskStalls: DiskStalls?, writeFailed: Bool, limitSeconds: Double = StopWatchdog.defaultLimitSeconds,
        giveUp: @escaping @Sendable (String) -> Void
    ) {
        let started = MonotonicClock.now()
        let limitNs = UInt64(limitSeconds * 1e9)
        _ = diskStalls?.takeRecentStalls()  // those of the recording: the stop's are what counts
        let watcher = DedicatedThread(name: "fc-stop-watch") { [done, settled] in
            var stalled: DiskWatch.Stall?
            while !done.wait(milliseconds: 250) {
                if let stall = diskStalls?.takeRecentStalls().max(by: { $0.seconds < $1.seconds }) {
                    if stall.seconds >= (stalled?.seconds ?? 0) { stalled = stall }
                }
                // Past the limit on a suspect disk; past three times it whatever the disk says (a
                // stop can wait in calls that are not timed: an open, a rename on a dead share).
                let ran = MonotonicClock.now() - started
                guard ran >= 3 * limitNs || (ran >= limitNs && (writeFailed || stalled != nil)) else { continue }
                guard settled.claim() else { return }
                let what =
                    stalled.map {
                        " (\($0.operation) of \($0.file): "
                            + "\(Self.seconds($0.seconds))\($0.ongoing ? " and still waiting" : ""))"
                    } ?? ""
                giveUp(
                    "the disk has not let the recording stop in "
                        + "\(Self.seconds(Double(ran) / 1e9))\(what)\(writeFailed ? " after a write failed" : ""): "
                        + "exiting without finishing the session; run `fieldcap recover` on it once the disk is back"
                )
                return
            }
        }
        thread = watcher
    }

    /// The stop is over: the watch ends. Once, from the thread that made it.
    public func finished() {
        _ = settled.claim()
        done.open()
        thread?.join()
        thread = nil
    }

    private static func seconds(_ value: Double) -> String { "\((value * 10).rounded() / 10) s" }
}
