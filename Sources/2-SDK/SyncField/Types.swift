import FieldcapOutput

/// SDK version string embedded in output files.
public let syncFieldVersion = "0.1.0"

/// A sensor channel value: a number (`Double`, `Float` or any integer type), or arrays and
/// `[String: Any]` dictionaries of them, nested to any depth.
///
/// Examples: `["accel_x": 0.12, "accel_y": -9.8]`, `["joints": ["wrist": [0.1, 0.2, 0.3]]]`.
public typealias ChannelValue = Any

/// The clock source every SyncField 0.1 line names.
public let syncFieldClockSource = "host_monotonic"

/// The uncertainty the SDK writes when the caller gives none: 5 ms.
public let syncFieldDefaultUncertaintyNs: UInt64 = 5_000_000

/// One timestamp line of `{stream_id}.timestamps.jsonl`.
public struct FrameTimestamp: Equatable, Sendable {
    public let frameNumber: Int
    public let captureNs: UInt64
    public let clockSource: String
    public let clockDomain: String
    public let uncertaintyNs: UInt64

    public init(
        frameNumber: Int, captureNs: UInt64, clockSource: String = syncFieldClockSource,
        clockDomain: String, uncertaintyNs: UInt64 = syncFieldDefaultUncertaintyNs
    ) {
        self.frameNumber = frameNumber
        self.captureNs = captureNs
        self.clockSource = clockSource
        self.clockDomain = clockDomain
        self.uncertaintyNs = uncertaintyNs
    }

    /// The line as the SDK writes it, with its trailing newline.
    public func jsonLine() -> [UInt8] {
        let out = OutputBytes(capacity: 160)
        LineEncoder(hostId: clockDomain, clockSource: clockSource).appendTimestampLine(
            to: out, captureNs: captureNs, frameNumber: frameNumber, uncertaintyNs: uncertaintyNs)
        return out.array
    }
}
