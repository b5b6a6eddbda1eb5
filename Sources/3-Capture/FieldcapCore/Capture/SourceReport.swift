import SyncField

/// What a capture source says about itself: what it was granted, how it stamps, what happened.
/// Every front end (the start lines, the sidecar, `fieldcap check`, `bench jitter`) reads a source
/// through this, never through its concrete type, so a new kind of source edits no front end.
///
/// `granted`, `summary` and `timestamps` are known once the source is set up; `details`,
/// `clockTracker` and `warnings` are complete once its capture thread has ended.
public struct SourceReport: Sendable {
    /// The sidecar section it fills (`v4l2`, `iio`), or `synthetic`.
    public var kind: String
    /// What setup granted, as `--json` and the sidecar give it: device, driver or name, format,
    /// size, rate and where the rate came from, channels, trigger, timestamp clock...
    public var granted: JSONValue
    /// The same in one line for a terminal, after the stream id and device: `vivid (vivid,
    /// platform:vivid-000), YUYV 640x480, 5 fps (the camera's current rate; fps= to change)`.
    public var summary: String
    /// Where `capture_ns` comes from, in a few words (`kernel, mapped`).
    public var timeSource: String
    /// How `capture_ns` and `uncertainty_ns` are made, for the sidecar's `timestamps`.
    public var timestamps: [String: String]
    /// The device's own facts for its sidecar section (counters, controls, clock mapping).
    public var details: JSONValue?
    /// The mapping of the device's clock into RAW, when it has one.
    public var clockTracker: ClockTracker?
    /// What the user should know at the end of a run (frames stamped at dequeue, kernel gaps).
    public var warnings: [String]

    public init(
        kind: String, granted: JSONValue, summary: String, timeSource: String, timestamps: [String: String],
        details: JSONValue? = nil, clockTracker: ClockTracker? = nil, warnings: [String] = []
    ) {
        self.kind = kind
        self.granted = granted
        self.summary = summary
        self.timeSource = timeSource
        self.timestamps = timestamps
        self.details = details
        self.clockTracker = clockTracker
        self.warnings = warnings
    }

    /// How a source stamped at dequeue (synthetic sources, devices without their own times)
    /// explains its timestamps.
    public static let dequeueTimestamps = [
        "capture_ns": "CLOCK_MONOTONIC_RAW read right after the frame or sample was dequeued",
        "uncertainty_ns":
            "how far capture_ns may be from the moment of capture: the "
            + "source's own timing (synthetic sources: the scheduler's wake-up)",
    ]

    /// A rate as a person writes it: `30`, `29.97`.
    public static func rate(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
