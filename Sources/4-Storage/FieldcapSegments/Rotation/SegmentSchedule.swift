/// Where segments begin and end in `CLOCK_MONOTONIC_RAW`: one every `lengthNs` from the
/// recording's start. A record belongs to the segment its `capture_ns` falls in, so each camera
/// is cut on a frame boundary: the first frame captured at or after a boundary opens the next
/// segment.
public struct SegmentSchedule: Sendable, Equatable {
    /// When the first segment begins.
    public var startNs: UInt64
    public var lengthNs: UInt64

    public init(startNs: UInt64, lengthNs: UInt64) {
        precondition(lengthNs > 0, "a segment has a length")
        self.startNs = startNs
        self.lengthNs = lengthNs
    }

    /// Where segment `number` (1 for the first) begins.
    public func startNs(ofSegment number: Int) -> UInt64 { startNs &+ UInt64(number - 1) &* lengthNs }

    /// Where segment `number` ends: where the next begins.
    public func endNs(ofSegment number: Int) -> UInt64 { startNs(ofSegment: number + 1) }
}
