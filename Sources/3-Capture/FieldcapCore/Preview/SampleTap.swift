import Synchronization

/// The hand-off of a sensor stream's samples from its writer to live viewers (a Foxglove
/// client, the web page's plots), which never slows the recording: while nobody watches, the
/// writer pays one atomic load a sample; while someone does, it copies each sample it wrote into
/// a ring of its own (a record, no allocation), and a full ring drops the sample for the
/// viewers alone. The recording has it already.
///
/// Thread-safe: `offer` from the stream's writer thread (one at a time: a recording's or the
/// preview capture's), `drain` from one reader thread, `watched` from any.
public final class SampleTap: Sendable {
    public let streamId: String
    /// The names of the values each sample carries, in order.
    public let channels: [String]
    private let ring: SPSCRing<CaptureRecord>
    private let watching = Atomic<Bool>(false)

    /// `capacity`: samples held for the reader (4,096 by default: 4 s of a 1 kHz IMU; the
    /// reader takes them every few tens of milliseconds).
    public init(streamId: String, channels: [String], capacity: Int = 4096) {
        self.streamId = streamId
        self.channels = channels
        ring = SPSCRing(minimumCapacity: capacity)
    }

    /// Whether the writer copies samples: set by the reader while it has viewers.
    public var watched: Bool {
        get { watching.load(ordering: .relaxed) }
        set { watching.store(newValue, ordering: .relaxed) }
    }

    /// Writer thread: copies the sample if anyone watches.
    @inline(__always)
    public func offer(_ record: CaptureRecord) {
        if watching.load(ordering: .relaxed) { ring.push(record, sequence: record.sequence) }
    }

    /// Reader thread: hands every sample waiting to `body`, oldest first.
    @discardableResult
    public func drain(_ body: (UnsafeBufferPointer<CaptureRecord>) -> Void) -> Int {
        ring.consume(body)
    }

    /// Samples the viewers lost because the reader was behind (the recording lost none of them).
    public var dropped: Int { ring.drops.count }
}
