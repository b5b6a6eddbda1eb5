import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// One reading of another clock against `CLOCK_MONOTONIC_RAW`: the other clock's time and the
/// RAW time at the same instant, known to within `bracketNs`.
public struct ClockPairSample: Sendable, Equatable {
    /// The other clock's reading.
    public var otherNs: Int64
    /// `CLOCK_MONOTONIC_RAW` at that instant: the midpoint of the RAW reads around it.
    public var rawNs: Int64
    /// The time between the two RAW reads around the other one: the pair's uncertainty.
    public var bracketNs: Int64

    public init(otherNs: Int64, rawNs: Int64, bracketNs: Int64) {
        self.otherNs = otherNs
        self.rawNs = rawNs
        self.bracketNs = bracketNs
    }

    /// RAW minus the other clock.
    public var offsetNs: Int64 { rawNs - otherNs }
}

/// Reads another clock against `CLOCK_MONOTONIC_RAW` as `RAW, OTHER, RAW` and keeps the narrowest
/// of a short burst of such brackets, which bounds how far apart the two reads can be.
public struct ClockPairReader: Sendable {
    /// Reads the two clocks; injectable so the estimator can be tested against known clocks.
    public var readRaw: @Sendable () -> Int64
    public var readOther: @Sendable () -> Int64
    public var burst: Int

    public init(burst: Int = 7, readRaw: @escaping @Sendable () -> Int64, readOther: @escaping @Sendable () -> Int64) {
        self.burst = max(1, burst)
        self.readRaw = readRaw
        self.readOther = readOther
    }

    /// This host's `clock` against `CLOCK_MONOTONIC_RAW`.
    public static func host(_ clock: clockid_t, burst: Int = 7) -> ClockPairReader {
        ClockPairReader(
            burst: burst, readRaw: { Int64(MonotonicClock.now()) }, readOther: { Int64(MonotonicClock.read(clock)) })
    }

    /// `clock` against RAW on this host, as `sample(after:)` does with `host(clock)`, but reading
    /// the clocks directly: the capture thread calls it at every dequeue, where a call through a
    /// closure per read doubled a bracket's width under emulation (5 µs against 1.4 µs, QEMU TCG).
    @inline(__always)
    public static func hostSample(_ clock: clockid_t, after firstRawNs: Int64, burst: Int = 2) -> ClockPairSample {
        var best = ClockPairSample(otherNs: 0, rawNs: 0, bracketNs: .max)
        var before = firstRawNs
        for _ in 0..<max(1, burst) {
            let other = Int64(MonotonicClock.read(clock))
            let after = Int64(MonotonicClock.now())
            let width = after - before
            if width < best.bracketNs {
                best = ClockPairSample(otherNs: other, rawNs: before + width / 2, bracketNs: width)
            }
            before = after
        }
        return best
    }

    /// A chained burst that starts from a RAW read the caller just made (a dequeue's time):
    /// `RAW, OTHER, RAW, OTHER, RAW...`, each RAW read closing one bracket and opening the next, so
    /// `burst` brackets take `2·burst` reads. The narrowest bracket wins.
    @inline(__always)
    public func sample(after firstRawNs: Int64) -> ClockPairSample {
        var best = ClockPairSample(otherNs: 0, rawNs: 0, bracketNs: .max)
        var before = firstRawNs
        for _ in 0..<burst {
            let other = readOther()
            let after = readRaw()
            let width = after - before
            if width < best.bracketNs {
                best = ClockPairSample(otherNs: other, rawNs: before + width / 2, bracketNs: width)
            }
            before = after
        }
        return best
    }

    public func sample() -> ClockPairSample {
        var best = ClockPairSample(otherNs: 0, rawNs: 0, bracketNs: .max)
        for _ in 0..<burst {
            let before = readRaw()
            let other = readOther()
            let after = readRaw()
            let width = after - before
            if width < best.bracketNs {
                best = ClockPairSample(otherNs: other, rawNs: before + width / 2, bracketNs: width)
            }
        }
        return best
    }
}
