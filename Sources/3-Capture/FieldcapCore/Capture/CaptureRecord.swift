/// One frame or sample on its way from a capture thread to the writer: plain data, fixed size,
/// so it crosses the SPSC ring without allocating.
public struct CaptureRecord: BitwiseCopyable {
    /// How many channel values a sample carries inline.
    public static let valueCapacity = 12

    /// The device's own count of this frame or sample (a gap means the device lost some).
    public var sequence: UInt64 = 0
    /// `CLOCK_MONOTONIC_RAW` read right after the dequeue returned.
    public var dequeueNs: UInt64 = 0
    /// The time written as `capture_ns`: the mapped device time when it can be trusted, else
    /// `dequeueNs`.
    public var captureNs: UInt64 = 0
    public var uncertaintyNs: UInt64 = 0
    /// The device's own timestamp of the frame or sample, in its own clock (0 when it has none).
    public var deviceNs: Int64 = 0
    /// Frames of a camera that reports its own start of exposure (a UVC camera's PTS): that
    /// instant mapped into `CLOCK_MONOTONIC_RAW`, and its bound; 0 when the frame has none.
    public var exposureStartNs: UInt64 = 0
    public var exposureUncertaintyNs: UInt64 = 0
    /// The exposure time taken for the frame's middle (`stamp=exposure-middle`), 0 otherwise.
    public var exposureTimeNs: UInt64 = 0
    /// The device's flags for the frame (V4L2 buffer flags), 0 for samples.
    public var flags: UInt32 = 0
    /// Frames: the source buffer holding the bytes (handed back after writing); -1 for samples.
    public var bufferIndex: Int32 = -1
    public var bytesUsed: UInt32 = 0
    public var valueCount: Int32 = 0
    public var values = InlineArray<12, Double>(repeating: 0)

    public init() {}
}
