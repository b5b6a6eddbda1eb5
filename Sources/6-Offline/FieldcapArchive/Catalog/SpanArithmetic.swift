/// Sums of nanosecond times read from disk or the network (a sync point, an index's
/// `last_capture_ns`, a query's range), which may hold any number: checked, so that a damaged or
/// hostile file gets an error and never a trap that takes `serve` and its recording down.
public enum SpanArithmetic {
    /// `base + value - origin`, the way a clock reading is moved onto another clock through a
    /// pair read together; negative results are held at 0 (before the epoch), and nil when the
    /// result is past what a `UInt64` holds.
    public static func add(_ base: UInt64, _ value: UInt64, minus origin: UInt64) -> UInt64? {
        let sum = Int128(base) + Int128(value) - Int128(origin)
        guard sum <= Int128(UInt64.max) else { return nil }
        return UInt64(clamping: sum)
    }

    /// The first instant after `ns` (the end of a half-open span), held at `UInt64.max`.
    public static func after(_ ns: UInt64) -> UInt64 {
        let (next, overflow) = ns.addingReportingOverflow(1)
        return overflow ? .max : next
    }
}
