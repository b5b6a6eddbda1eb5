#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `CLOCK_MONOTONIC_RAW` in nanoseconds, for the waits' deadlines here: the clock the sessions
/// are stamped with (SyncField's `MonotonicClock`, which this layer comes before).
@inline(__always)
func monotonicRawNow() -> UInt64 {
    var ts = timespec()
    _ = clock_gettime(CLOCK_MONOTONIC_RAW, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
