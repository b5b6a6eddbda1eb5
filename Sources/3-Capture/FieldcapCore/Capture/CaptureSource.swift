import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// What a stream is, as the writer and the session sidecar need to know it.
public struct StreamDescriptor: Sendable, Equatable {
    /// `feed`: a sensor stream another program feeds, its values of any shape (`feedValues`).
    public enum Kind: String, Sendable { case video, sensor, feed }

    /// The SyncField stream id (a file name in the session directory).
    public var id: String
    public var kind: Kind
    /// Sensor streams: the channel names, in the order of `CaptureRecord.values`.
    public var channels: [String]
    /// The rate the source was asked for, per second.
    public var nominalRate: Double
    /// The device, as the user named it (`/dev/video0`, `iio:device0`, `synthetic:1000`).
    public var device: String
    /// Video streams: the frames' format.
    public var videoFormat: VideoFormat?
    /// Video streams: the buffers the source captures into. Each comes back only once the writer
    /// has written its frame, so this bounds how long the writer may sleep.
    public var frameBuffers: Int?
    /// Video streams whose buffers a device can read in place (a V4L2 camera's, which a hardware
    /// encoder can import as DMABUF); nil for the others.
    public var sharedBuffers: SharedFrameBuffers?
    /// Fed streams: where each record's channels wait for the writer (the record's `bufferIndex`
    /// names the slot).
    public var feedValues: FeedValues?

    public init(
        id: String, kind: Kind, channels: [String] = [], nominalRate: Double, device: String,
        videoFormat: VideoFormat? = nil, frameBuffers: Int? = nil, sharedBuffers: SharedFrameBuffers? = nil,
        feedValues: FeedValues? = nil
    ) {
        self.id = id
        self.kind = kind
        self.channels = channels
        self.nominalRate = nominalRate
        self.device = device
        self.videoFormat = videoFormat
        self.frameBuffers = frameBuffers
        self.sharedBuffers = sharedBuffers
        self.feedValues = feedValues
    }
}

/// Tells capture threads to finish. Thread-safe.
///
/// A flag for loops that check it, and a pipe that becomes readable at the same moment, for
/// capture threads that wait in `poll` on a device: they put `wakeDescriptor` in their poll set
/// and wake at once instead of at their next time-out.
public final class StopSignal: Sendable {
    private let latch = Latch()

    public init() {}

    /// Readable once a stop is requested, and from then on.
    public var wakeDescriptor: Int32 { latch.descriptor }

    public func request() { latch.open() }

    @inline(__always)
    public var isRequested: Bool { latch.isOpen }

    /// Sleeps up to `milliseconds`, or until a stop is requested; `true` once one is.
    ///
    /// For threads with periodic work and nothing else to wait on: they wake when there is
    /// work, not every few milliseconds to look at the flag.
    public func wait(milliseconds: Int32) -> Bool { latch.wait(milliseconds: milliseconds) }

    /// One idle turn of a loop that drains what capture threads push (`Latch.idle`).
    package func idle(nanoseconds: UInt64) { latch.idle(nanoseconds: nanoseconds) }
}

/// The seam every device plugs into: V4L2 cameras, IIO IMUs and the synthetic sources.
///
/// `run` is the capture loop. It runs on a capture thread of its own: wait for the device, stamp
/// each frame or sample at dequeue, fill a `CaptureRecord`, `push` it into the ring (which counts
/// a drop when full and never waits), repeat until `stop` is requested. It must not allocate,
/// lock or log per record.
public protocol CaptureSource: AnyObject, Sendable {
    var descriptor: StreamDescriptor { get }

    /// Captures until `stop` is requested (or the device ends). Capture-thread-bound.
    func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws

    /// The bytes of the frame `record` refers to, read in place (no copy). Writer-thread-bound,
    /// valid until `releaseBuffer`. The default has none (sources without frames).
    func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer?

    /// Hands a frame buffer back after the writer wrote it. Writer-thread-bound; the default does
    /// nothing (sources without buffers).
    func releaseBuffer(_ index: Int32)

    /// What the source was granted, how it stamps, and (once its capture thread has ended) what
    /// happened. Front ends read sources only through this. The default describes the stream
    /// from its descriptor, stamped at dequeue.
    var report: SourceReport { get }

    /// Records the device lost before the capture thread saw them, as the device's own count
    /// shows (a camera's sequence gaps: frames it skipped, for one when fieldcap held all its
    /// buffers; an IMU's timeline gaps). Counted by the capture thread, read from any thread.
    /// nil (the default) for sources that cannot tell.
    var deviceGaps: DropCounter? { get }

    /// The times the source's device was away and came back (a source that rejoins its device
    /// after an unplug); nil (the default) for sources that end with their device.
    var presence: StreamPresence? { get }

    /// The mapping of the device's clock into `CLOCK_MONOTONIC_RAW` as it stands, for live
    /// viewers; nil for a source stamped in RAW itself (at dequeue, or synthetic).
    var clockHealth: ClockHealthBoard? { get }
}

extension CaptureSource {
    public func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? { nil }
    public func releaseBuffer(_ index: Int32) {}

    public var report: SourceReport {
        var granted: [String: JSONValue] = [
            "device": .string(descriptor.device), "rate": .double(descriptor.nominalRate),
        ]
        var summary = "\(SourceReport.rate(descriptor.nominalRate)) \(descriptor.kind == .video ? "fps" : "Hz")"
        if let format = descriptor.videoFormat {
            granted["format"] = .string(format.pixelFormat.rawValue)
            granted["width"] = JSONValue(format.width)
            granted["height"] = JSONValue(format.height)
            summary = "\(format.pixelFormat.rawValue) \(format.width)x\(format.height), " + summary
        }
        if !descriptor.channels.isEmpty {
            granted["channels"] = .array(descriptor.channels.map { .string($0) })
            summary = "\(descriptor.channels.joined(separator: " ")), " + summary
        }
        return SourceReport(
            kind: "other", granted: .object(granted), summary: summary, timeSource: "dequeue",
            timestamps: SourceReport.dequeueTimestamps)
    }

    public var deviceGaps: DropCounter? { nil }
    public var presence: StreamPresence? { nil }
    public var clockHealth: ClockHealthBoard? { nil }
}

extension Double {
    /// `30` for 30.0, `29.97` for 29.97: how a rate is written in device names.
    var formatted: String {
        self == rounded() && abs(self) < 1e15 ? String(Int64(self)) : String(self)
    }
}
