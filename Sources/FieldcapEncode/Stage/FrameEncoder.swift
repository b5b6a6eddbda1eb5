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
}

extension JPEGEncoder: FrameEncoder {
    public var encodedFormat: VideoFormat {
        VideoFormat(width: format.width, height: format.height, pixelFormat: .mjpeg)
    }

    public var name: String { "libjpeg-turbo" }

    public func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        try encode(frame) { try emit(EncodedFrame(record: record, bytes: $0)) }
    }

    /// A JPEG is done when `encode` returns: nothing is held.
    public func drain(emit: FrameEncoder.Emit) throws {}
}
