/// One `stamp()` or `record()` call on its way from the caller to the writer thread.
///
/// Plain data: the values of a fixed-shape sensor record travel inline, so such a record
/// crosses the queue without touching the heap.
struct QueueEntry {
    enum Kind: UInt8 {
        /// A claimed slot that carries nothing: its call raced with `stop()` and was refused.
        case void
        /// `stamp()`: a timestamp line.
        case stamp
        /// `record()` with a `[String: Any]`: a timestamp line and a sensor line.
        case record
        /// `SensorStream.record()`: the same two lines, values inline in `values`.
        case recordFixed
    }

    /// How many values a fixed-shape record carries inline.
    static let inlineValueCapacity = 16

    var kind: Kind = .void
    var streamIndex: Int32 = 0
    var frameNumber: Int = 0
    var captureNs: UInt64 = 0
    var uncertaintyNs: UInt64 = 0
    var values = InlineArray<16, Double>(repeating: 0)

    init() {}

    init(kind: Kind, streamIndex: Int, frameNumber: Int, captureNs: UInt64, uncertaintyNs: UInt64) {
        self.kind = kind
        self.streamIndex = Int32(streamIndex)
        self.frameNumber = frameNumber
        self.captureNs = captureNs
        self.uncertaintyNs = uncertaintyNs
    }
}
