import FieldcapSystem
import SyncField
import Synchronization

/// A recording's disk figures (the free space, the bytes the recording holds), read on a thread
/// of its own every half second. On a share that went away, `statvfs` and `stat` wait out the
/// mount's timeouts (tens of seconds on a soft NFS or CIFS mount, for ever on a hard one). The
/// thread that decides when to stop and samples the status (`RecordingRunner`'s) reads the last
/// figures here instead, so a dead share never keeps it from stopping the recording (#43).
/// Thread-safe.
public final class DiskGauge: Sendable {
    private static let unknown = UInt64.max
    /// Written by the gauge's thread, read by any.
    private final class Figures: Sendable {
        let free = Atomic<UInt64>(DiskGauge.unknown)
        let bytes = Atomic<UInt64>(DiskGauge.unknown)
        let readAtNs = Atomic<UInt64>(0)
        /// Whether `low` was told.
        let lowSaid = Atomic<Bool>(false)
    }
    private let figures = Figures()
    private let stopped = Latch()

    /// Reads once on the caller's thread (the figures exist from the start), then every
    /// `intervalMilliseconds` on the gauge's thread until `stop`. The first reading below
    /// `lowBelow` bytes free is told to `low`, once, on the thread that read it.
    public init(
        directory: String, intervalMilliseconds: Int = 500,
        readFree: @escaping @Sendable (String) -> UInt64? = { FieldcapSession.freeBytes(at: $0) },
        lowBelow: UInt64? = nil, low: (@Sendable (_ freeBytes: UInt64) -> Void)? = nil,
        countBytes: @escaping @Sendable () -> UInt64
    ) {
        let read: @Sendable () -> Void = { [figures] in
            let free = readFree(directory)
            if let free, let lowBelow, let low, free < lowBelow,
                !figures.lowSaid.exchange(true, ordering: .relaxed)
            {
                low(free)
            }
            figures.free.store(free ?? DiskGauge.unknown, ordering: .relaxed)
            figures.bytes.store(countBytes(), ordering: .relaxed)
            figures.readAtNs.store(MonotonicClock.now(), ordering: .releasing)
        }
        read()
        // Never joined: a reading held by the kernel on a dead share must not hold the stop too.
        detachThread(named: "fc-disk-gauge") { [stopped] in
            while !stopped.wait(milliseconds: Int32(clamping: intervalMilliseconds)) { read() }
        }
    }

    // The thread holds the figures and the latch, not the gauge: a gauge dropped without `stop`
    // (a start that failed after making it) still ends its readings.
    deinit { stopped.open() }

    /// Free bytes for an unprivileged writer at the last reading; nil when the file system did
    /// not say.
    public var freeBytes: UInt64? {
        let value = figures.free.load(ordering: .relaxed)
        return value == Self.unknown ? nil : value
    }

    /// The recording's bytes on disk at the last reading.
    public var recordingBytes: UInt64 {
        let value = figures.bytes.load(ordering: .relaxed)
        return value == Self.unknown ? 0 : value
    }

    /// Seconds since the last reading ended: about the interval while the disk answers, growing
    /// while a reading waits on it.
    public var secondsSinceReading: Double {
        Double(MonotonicClock.now() &- figures.readAtNs.load(ordering: .acquiring)) / 1e9
    }

    /// Ends the readings; returns at once, even while a reading waits on the disk.
    public func stop() { stopped.open() }
}
