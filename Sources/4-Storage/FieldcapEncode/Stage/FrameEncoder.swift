import FieldcapCore

/// One frame as an encoder emits it: the record it was captured as, its coded bytes (read in
/// place, valid during the call) and whether a decoder can start at it.
public struct EncodedFrame {
    public var record: CaptureRecord
    public var bytes: UnsafeRawBufferPointer
    /// It decodes on its own (an I-frame); every JPEG and FFV1 frame does.
    public var isKeyframe: Bool

    public init(record: CaptureRecord, bytes: UnsafeRawBufferPointer, isKeyframe: Bool = true) {
        self.record = record
        self.bytes = bytes
        self.isKeyframe = isKeyframe
    }
}

/// Compresses one camera's raw frames, in order.
///
/// An encoder may hold frames inside (a hardware encoder's pipeline): `encode` then emits an
/// earlier frame, or none, and `drain` emits the rest at the end. Each emitted frame comes with
/// the record it was captured as, and its bytes are read in place, valid during the call.
///
/// Thread-bound: an `EncodingWorker`'s thread.
public protocol FrameEncoder: AnyObject {
    /// Takes each frame the encoder emits.
    typealias Emit = (EncodedFrame) throws -> Void

    /// The format of what the encoder emits (MJPEG for JPEG).
    var encodedFormat: VideoFormat { get }
    /// What the sidecar and `fieldcap list` call the encoder: `libjpeg-turbo`.
    var name: String { get }
    /// What a decoder needs before the first frame, stored with the video track (Matroska's
    /// CodecPrivate): FFV1's configuration record; empty for JPEG.
    var codecPrivate: [UInt8] { get }
    /// False while `codecPrivate` waits for the first frames (a hardware H.264 encoder's
    /// parameter sets come with its first frame): the track is then written once they came.
    var isCodecPrivateReady: Bool { get }
    /// Each frame is coded on its own and emitted by its own `encode` (JPEG, intra-only FFV1):
    /// several such encoders can share a camera, one per thread. False for an encoder that
    /// holds frames or codes them against each other (a hardware H.264 encoder).
    var codesFramesAlone: Bool { get }

    /// Encodes `frame`, captured as `record`.
    func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit) throws

    /// Emits the frames still inside the encoder; no `encode` follows.
    func drain(emit: FrameEncoder.Emit) throws
}

extension FrameEncoder {
    public var codecPrivate: [UInt8] { [] }
    public var isCodecPrivateReady: Bool { true }
    public var codesFramesAlone: Bool { false }
}

/// An encoder that reads each frame from an input buffer of its own (a V4L2 encoder's OUTPUT
/// queue) rather than from memory it is handed, so that a frame is copied once, by the writer,
/// straight into the buffer the encoder reads; or, where it imports the camera's buffers
/// (`importedBuffers`, DMABUF), not copied at all.
///
/// Its `EncodingWorker` takes the input buffers as its slots: it fills a free one on the writer
/// thread (`fill`), then hands it over on the worker's (`encode(input:...)`), and the encoder
/// gives each back through `inputReturned` once it is done reading it.
///
/// Thread-bound to the worker's thread, but for `fill`, which the writer calls on a buffer the
/// encoder does not hold.
public protocol BufferedFrameEncoder: FrameEncoder {
    /// Input buffers the writer may fill: how many frames may be waiting or inside the encoder.
    var inputSlots: Int { get }
    /// The camera's buffers, when the encoder reads them in place (DMABUF); nil when frames are
    /// copied into its own.
    var importedBuffers: SharedFrameBuffers? { get }
    /// Called with each input buffer (its slot, or the camera's buffer index) the encoder is
    /// done with. Set by the worker before the first frame.
    var inputReturned: (Int) -> Void { get set }
    /// How frames are laid out in the input buffers when not as captured: "padded to 640x360"
    /// (the encoder's alignment); nil when they are.
    var inputLayout: String? { get }
    /// Copies `frame` into input buffer `slot`, which the encoder does not hold. Writer-bound.
    func fill(_ slot: Int, with frame: UnsafeRawBufferPointer)
    /// Codes the frame in input buffer `slot` (filled; or the camera's buffer `slot`), `length`
    /// bytes captured as `record`, emitting the coded frames that are ready.
    func encode(input slot: Int, length: Int, record: CaptureRecord, emit: FrameEncoder.Emit) throws
}

extension JPEGEncoder: FrameEncoder {
    public var encodedFormat: VideoFormat {
        VideoFormat(width: format.width, height: format.height, pixelFormat: .mjpeg)
    }

    public var name: String { "libjpeg-turbo" }

    public var codesFramesAlone: Bool { true }

    public func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        try encode(frame) { try emit(EncodedFrame(record: record, bytes: $0)) }
    }

    /// A JPEG is done when `encode` returns: nothing is held.
    public func drain(emit: FrameEncoder.Emit) throws {}
}
