import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The hand-off of one frame from a video stream's writer to a live preview, which never slows
/// the recording: the writer copies a frame only when the preview has asked for one and is not
/// busy with the last, and otherwise pays one atomic load per frame. With no viewer the preview
/// never asks, and the tap costs nothing more.
///
/// The preview asks (`request`), the writer copies the next frame it writes into the preview's
/// buffer (`offer`) and rings, the preview reads the copy (`withFrame`) and asks again when it
/// wants the next. The buffer is the preview's: it grows it between requests, so the writer
/// never allocates; a frame bigger than the buffer (a compressed one) is skipped and its size
/// noted, and the next request makes room for it.
///
/// Thread-safe: `offer` from the stream's writer thread, the rest from one preview thread.
public final class FrameTap: @unchecked Sendable {
    /// What the copied frame was.
    public struct Frame: Sendable, Equatable {
        public var captureNs: UInt64
        public var sequence: UInt64
        public var byteCount: Int
        /// The frame is a JPEG of the camera's frame (an `encode=jpeg` camera's, from its
        /// encoder), not the frame in the tap's `format`: the preview passes it on as it is.
        public var isJPEG: Bool

        public init(captureNs: UInt64, sequence: UInt64, byteCount: Int, isJPEG: Bool = false) {
            self.captureNs = captureNs
            self.sequence = sequence
            self.byteCount = byteCount
            self.isJPEG = isJPEG
        }
    }

    public let streamId: String
    public let format: VideoFormat
    /// The preview changes the frames it shows (covers faces): it takes the raw frames, never a
    /// recording's JPEGs of them.
    public let wantsRawFrames: Bool

    private enum State: Int {
        /// Nobody wants a frame: `offer` returns at once.
        case idle
        /// The preview wants the next frame and will not touch the buffer until it is filled.
        case wanted
        /// The writer is copying into the buffer.
        case filling
        /// A frame is in the buffer for the preview.
        case filled
    }

    private let state = Atomic<Int>(State.idle.rawValue)
    private let doorbell = Doorbell()
    /// Written by whoever holds the buffer: the preview while idle or filled, the writer while filling.
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    private var frame = Frame(captureNs: 0, sequence: 0, byteCount: 0)
    /// The largest frame that did not fit, for the next request.
    private let largestSkipped = Atomic<Int>(0)
    /// The earliest `capture_ns` the request takes: frames before it are passed over.
    private let notBeforeNs = Atomic<UInt64>(0)

    public init(streamId: String, format: VideoFormat, wantsRawFrames: Bool = false) {
        self.streamId = streamId
        self.format = format
        self.wantsRawFrames = wantsRawFrames
    }

    deinit { buffer?.deallocate() }

    /// Writer thread: copies the frame if the preview is waiting for one. `isJPEG`: the bytes are
    /// the frame encoded as JPEG (by the recording's encoder), which the preview need not encode
    /// again. Whoever offers first fills the request, so two threads may offer (a segment's
    /// encoder and the next one's, at a boundary).
    @inline(__always)
    public func offer(_ record: CaptureRecord, bytes: UnsafeRawBufferPointer?, isJPEG: Bool = false) {
        guard state.load(ordering: .relaxed) == State.wanted.rawValue else { return }
        take(record, bytes, isJPEG: isJPEG)
    }

    private func take(_ record: CaptureRecord, _ bytes: UnsafeRawBufferPointer?, isJPEG: Bool) {
        guard let bytes, let source = bytes.baseAddress, record.captureNs >= notBeforeNs.load(ordering: .relaxed),
            state.compareExchange(
                expected: State.wanted.rawValue, desired: State.filling.rawValue, ordering: .acquiring
            ).exchanged
        else { return }
        guard bytes.count <= capacity, let buffer else {
            largestSkipped.store(bytes.count, ordering: .relaxed)
            state.store(State.wanted.rawValue, ordering: .releasing)
            return
        }
        buffer.copyMemory(from: source, byteCount: bytes.count)
        frame = Frame(captureNs: record.captureNs, sequence: record.sequence, byteCount: bytes.count, isJPEG: isJPEG)
        state.store(State.filled.rawValue, ordering: .releasing)
        doorbell.ring()
    }

    /// Preview thread: asks for the next frame the writer writes that was captured at or after
    /// `notBeforeNs`. `bytes` is the size of a frame for raw formats; compressed ones start from
    /// it and grow as frames need.
    ///
    /// Asked for ahead of time with the capture time it wants, the preview gets frames at its own
    /// rate whatever the writer's batches (a camera's writer wakes every few frames).
    public func request(bytes: Int, notBeforeNs: UInt64 = 0) {
        cancel()
        self.notBeforeNs.store(notBeforeNs, ordering: .relaxed)
        let needed = max(bytes, largestSkipped.load(ordering: .relaxed))
        if needed > capacity {
            buffer?.deallocate()
            // Rounded up, so a compressed stream's sizes settle after a few growths.
            capacity = (needed + needed / 4 + 4095) & ~4095
            buffer = .allocate(byteCount: capacity, alignment: 64)
        }
        state.store(State.wanted.rawValue, ordering: .releasing)
    }

    /// Preview thread: waits up to `milliseconds` for the requested frame, or until `latch`
    /// opens; true once a frame is there.
    package func wait(milliseconds: Int32, orUntil latch: Latch) -> Bool {
        if state.load(ordering: .acquiring) == State.filled.rawValue { return true }
        _ = doorbell.wait(milliseconds: milliseconds, orUntil: latch)
        return state.load(ordering: .acquiring) == State.filled.rawValue
    }

    /// Preview thread: reads the frame that came, then goes idle until the next request.
    public func withFrame<T>(_ body: (UnsafeRawBufferPointer, Frame) throws -> T) rethrows -> T? {
        guard state.load(ordering: .acquiring) == State.filled.rawValue, let buffer else { return nil }
        defer { state.store(State.idle.rawValue, ordering: .releasing) }
        return try body(UnsafeRawBufferPointer(start: buffer, count: frame.byteCount), frame)
    }

    /// Preview thread: withdraws a request. A copy under way is finished first (a few hundred
    /// microseconds), so the buffer is the preview's again when this returns.
    public func cancel() {
        while true {
            let current = state.load(ordering: .acquiring)
            if current == State.idle.rawValue { return }
            if current == State.filling.rawValue {
                sched_yield()
                continue
            }
            if state.compareExchange(expected: current, desired: State.idle.rawValue, ordering: .acquiringAndReleasing)
                .exchanged
            {
                return
            }
        }
    }
}
