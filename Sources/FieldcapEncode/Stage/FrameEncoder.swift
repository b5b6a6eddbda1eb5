import FieldcapCore

/// Compresses one camera's raw frames, in order.
///
/// An encoder may hold frames inside (a hardware encoder's pipeline): `encode` then emits an
/// earlier frame, or none, and `drain` emits the rest at the end. Each emitted frame comes with
/// the record it was captured as, and its bytes are read in place, valid during the call.
///
/// Thread-bound: an `EncodingWorker`'s thread.
public protocol FrameEncoder: AnyObject {
    /// The format of what the encoder emits (MJPEG for JPEG).
    var encodedFormat: VideoFormat { get }
    /// What the sidecar and `fieldcap list` call the encoder: `libjpeg-turbo`.
    var name: String { get }
    /// What a decoder needs before the first frame, stored with the video track (Matroska's
    /// CodecPrivate): FFV1's configuration record; empty for JPEG.
    var codecPrivate: [UInt8] { get }

    /// Encodes `frame`, captured as `record`.
    func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: (CaptureRecord, UnsafeRawBufferPointer) throws -> Void) throws

    /// Emits the frames still inside the encoder; no `encode` follows.
    func drain(emit: (CaptureRecord, UnsafeRawBufferPointer) throws -> Void) throws
}

extension FrameEncoder {
    public var codecPrivate: [UInt8] { [] }
}

extension JPEGEncoder: FrameEncoder {
    public var encodedFormat: VideoFormat {
        VideoFormat(width: format.width, height: format.height, pixelFormat: .mjpeg)
    }

    public var name: String { "libjpeg-turbo" }

    public func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: (CaptureRecord, UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try encode(frame) { try emit(record, $0) }
    }

    /// A JPEG is done when `encode` returns: nothing is held.
    public func drain(emit: (CaptureRecord, UnsafeRawBufferPointer) throws -> Void) throws {}
}
