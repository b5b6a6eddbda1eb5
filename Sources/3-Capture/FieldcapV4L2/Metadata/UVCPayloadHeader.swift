/// One UVC payload header as `uvcvideo` keeps it in a metadata buffer (`V4L2_META_FMT_UVC`,
/// `struct uvc_meta_buf` in linux/uvcvideo.h): the host's clock and USB frame number when the
/// payload was decoded, then the header's flags and its PTS and SCR when the camera sent them.
///
/// `uvcvideo` keeps a header only when it carries more than the two standard bytes and, when it
/// has an SCR, only when that differs from the last one kept; a header with neither PTS nor SCR
/// is not kept. A frame's buffer thus holds one header per payload that told something new: the
/// first (with the PTS) and those whose clock reference moved.
///
/// Thread-safe: a value.
public struct UVCPayloadHeader: Sendable, Equatable {
    /// `uvcvideo`'s clock (its `clock` module parameter: `CLOCK_MONOTONIC` unless changed) as it
    /// decoded the payload.
    public var hostNs: UInt64
    /// The USB frame number the host read at that moment (`usb_get_current_frame_number`): the
    /// 11-bit start-of-frame counter the camera's SCR also reads.
    public var hostFrame: UInt16
    /// `bmHeaderInfo`: frame id, end of frame, PTS, SCR, still image, error, end of header.
    public var flags: UInt8
    /// The presentation time stamp, in the camera's clock (`dwClockFrequency` ticks): the start
    /// of the frame's exposure by the UVC specification (1.5, 2.4.3.3).
    public var pts: UInt32?
    /// The source clock reference: the camera's clock and the USB frame counter (11 bits) read
    /// at one instant.
    public var stc: UInt32?
    public var deviceFrame: UInt16?

    public init(
        hostNs: UInt64, hostFrame: UInt16, flags: UInt8, pts: UInt32? = nil, stc: UInt32? = nil,
        deviceFrame: UInt16? = nil
    ) {
        self.hostNs = hostNs
        self.hostFrame = hostFrame
        self.flags = flags
        self.pts = pts
        self.stc = stc
        self.deviceFrame = deviceFrame
    }

    /// `bmHeaderInfo` bits (UVC 1.5, table 2-5).
    public static let hasPTS: UInt8 = 0x04
    public static let hasSCR: UInt8 = 0x08
    public static let error: UInt8 = 0x40

    /// The USB start-of-frame counter is 11 bits wide (USB 2.0, 8.4.3.1).
    public static let frameMask: UInt16 = 0x7FF
}

/// Reads the payload headers out of a `V4L2_META_FMT_UVC` buffer.
public enum UVCMetadata {
    /// What a metadata buffer held: its headers in order, and how many bytes at its end did not
    /// make a whole header (a buffer `uvcvideo` cut short, or one that is not what it says).
    public struct Contents: Sendable, Equatable {
        public var headers: [UVCPayloadHeader]
        public var strayBytes: Int
    }

    /// The bytes before a header's own: `ns` (8) and `sof` (2), then its `bLength` and
    /// `bmHeaderInfo`.
    static let blockPrefix = 12

    /// Parses `bytes` (the buffer's first `bytesused` bytes) into headers: `forEachHeader`,
    /// collected.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Contents {
        var headers: [UVCPayloadHeader] = []
        let stray = forEachHeader(in: bytes) { headers.append($0) }
        return Contents(headers: headers, strayBytes: stray)
    }

    /// Hands each header in `bytes` to `body`, in order, and returns how many bytes at the end
    /// did not make a whole one. For `V4L2_META_FMT_UVC` `uvcvideo` copies only the standard
    /// fields, so a header's size follows from its flags (2, + 4 for a PTS, + 6 for an SCR), not
    /// from the `bLength` the camera sent: a camera's vendor bytes are left out. Never reads past
    /// `bytes`, whatever the flags say; allocates nothing (the camera's thread calls it per frame).
    @discardableResult
    public static func forEachHeader(
        in bytes: UnsafeRawBufferPointer, _ body: (UVCPayloadHeader) -> Void
    ) -> Int {
        var offset = 0
        while bytes.count - offset >= blockPrefix {
            let flags = bytes[offset + 11]
            let hasPTS = flags & UVCPayloadHeader.hasPTS != 0
            let hasSCR = flags & UVCPayloadHeader.hasSCR != 0
            let size = blockPrefix + (hasPTS ? 4 : 0) + (hasSCR ? 6 : 0)
            guard bytes.count - offset >= size else { break }
            var header = UVCPayloadHeader(
                hostNs: UInt64(littleEndianAt: offset, in: bytes),
                hostFrame: UInt16(littleEndianAt: offset + 8, in: bytes), flags: flags)
            var field = offset + blockPrefix
            if hasPTS {
                header.pts = UInt32(littleEndianAt: field, in: bytes)
                field += 4
            }
            if hasSCR {
                header.stc = UInt32(littleEndianAt: field, in: bytes)
                header.deviceFrame = UInt16(littleEndianAt: field + 4, in: bytes) & UVCPayloadHeader.frameMask
            }
            body(header)
            offset += size
        }
        return bytes.count - offset
    }
}

extension FixedWidthInteger {
    /// The little-endian integer at `offset` in `bytes`; the caller has checked the bounds.
    fileprivate init(littleEndianAt offset: Int, in bytes: UnsafeRawBufferPointer) {
        var value: Self = 0
        for index in 0..<MemoryLayout<Self>.size {
            value |= Self(truncatingIfNeeded: bytes[offset + index]) << (8 * index)
        }
        self = value
    }
}
