#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The session's time base: `CLOCK_MONOTONIC_RAW`, in nanoseconds.
///
/// Every `capture_ns` in a SyncField session is on this clock. It never slews with NTP, so
/// intervals between frames are the hardware's intervals. On Linux `clock_gettime` reads it
/// through the vDSO: no system call.
///
/// Thread-safe.
public enum MonotonicClock {
    /// Current `CLOCK_MONOTONIC_RAW` time in nanoseconds.
    @inline(__always)
    public static func now() -> UInt64 {
        read(CLOCK_MONOTONIC_RAW)
    }

    /// Current `CLOCK_REALTIME` (wall clock) in nanoseconds since the Unix epoch.
    public static func wallClockNs() -> UInt64 {
        read(CLOCK_REALTIME)
    }

    /// Reads `clock` as nanoseconds. The corresponding C call is `clock_gettime(2)`.
    @inline(__always)
    public static func read(_ clock: clockid_t) -> UInt64 {
        var ts = timespec()
        // clock_gettime cannot fail for these clock ids on any kernel fieldcap supports.
        _ = clock_gettime(clock, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Reads `CLOCK_MONOTONIC_RAW` and `CLOCK_REALTIME` as a tight pair.
    ///
    /// Takes a few `RAW, REALTIME, RAW` brackets and keeps the narrowest, so the two values were
    /// read as close together as this machine allows. The RAW value is the bracket's midpoint.
    ///
    /// - Returns: the pair and the width of the bracket that produced it, in nanoseconds.
    public static func pairedRead(attempts: Int = 8) -> (monotonicNs: UInt64, wallClockNs: UInt64, bracketNs: UInt64) {
        var best: (UInt64, UInt64, UInt64) = (0, 0, .max)
        for _ in 0..<max(1, attempts) {
            let before = now()
            let wall = wallClockNs()
            let after = now()
            let width = after &- before
            if width < best.2 {
                best = (before &+ width / 2, wall, width)
            }
        }
        return (best.0, best.1, best.2)
    }
}
