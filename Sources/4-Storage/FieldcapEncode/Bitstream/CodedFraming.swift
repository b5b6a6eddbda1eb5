import FieldcapCore

/// How a codec's coded buffers become the frames of its Matroska track: what the track needs
/// before its first frame (CodecPrivate), and each buffer's bytes as a Matroska block holds them.
///
/// Hardware encoders hand out their codec's own byte stream (H.264 and HEVC as Annex B, with
/// start codes), while Matroska stores H.264 and HEVC as length-prefixed NAL units with the
/// parameter sets in CodecPrivate (ISO/IEC 14496-15's avcC and hvcC), which only the first
/// coded frame can give.
///
/// Thread-bound: the encoding worker's.
public protocol CodedFraming: AnyObject {
    /// The track's CodecPrivate, or nil while the frames that give it have not come yet.
    var codecPrivate: [UInt8]? { get }

    /// One coded buffer as a frame (valid until the next call), or nil when it holds no picture
    /// (a stream header on its own). `keyframe` is the driver's flag, which the framing may
    /// correct from the stream itself.
    func frame(_ buffer: UnsafeRawBufferPointer, keyframe: Bool) throws -> EncodedBytes?
}

/// A frame's bytes as its track stores them.
public struct EncodedBytes {
    public var bytes: UnsafeRawBufferPointer
    public var isKeyframe: Bool
}

/// vicodec's FWHT: each buffer is one whole frame with its own header, stored as it comes; the
/// CodecPrivate is known at once. A keyframe is a frame whose header says I-frame
/// (`V4L2_FWHT_FL_I_FRAME` in the big-endian flags after the magic, version, width and height):
/// vicodec's encoder does not flag its buffers.
public final class FWHTFraming: CodedFraming {
    public let codecPrivate: [UInt8]?

    public init(codecPrivate: [UInt8]) { self.codecPrivate = codecPrivate }

    public func frame(_ buffer: UnsafeRawBufferPointer, keyframe: Bool) throws -> EncodedBytes? {
        guard buffer.count >= 24 else { throw BitstreamError("an FWHT frame of \(buffer.count) bytes has no header") }
        let flags = (20..<24).reduce(UInt32(0)) { $0 << 8 | UInt32(buffer[$1]) }
        return EncodedBytes(bytes: buffer, isKeyframe: flags & (1 << 10) != 0)
    }
}
