/// One camera frame as a JPEG, as viewers get it.
public struct PreviewFrame: Sendable {
    public var streamId: String
    public var jpeg: [UInt8]
    public var width: Int
    public var height: Int
    /// The frame's `capture_ns` (CLOCK_MONOTONIC_RAW), as the session has it.
    public var captureNs: UInt64
    /// The device's sequence number of the frame.
    public var sequence: UInt64
    /// Counts the preview's frames from 1: a viewer sees whether it skipped some.
    public var number: UInt64
    /// When it was encoded (CLOCK_MONOTONIC_RAW), to tell a fresh frame from a stale one.
    public var encodedNs: UInt64
}
