import CMatroska

/// Reads a Matroska file's video frames back with libmatroska, in file order: what salvage and
/// `fieldcap extract` copy from, byte for byte.
public enum MatroskaFrames {
    /// Calls `body` with each frame's bytes and time (ns on the file's timeline) until the file
    /// ends or `body` returns false. Throws when the file cannot be opened or read.
    public static func forEach(
        in path: String, _ body: (UnsafeRawBufferPointer, UInt64) -> Bool
    ) throws(MediaError) {
        try forEachFrame(in: path) { body($0.bytes, $0.timeNs) }
    }

    /// One frame read back.
    public struct Frame {
        /// Its bytes, valid during the call only.
        public var bytes: UnsafeRawBufferPointer
        /// Its time in ns on the file's timeline.
        public var timeNs: UInt64
        /// Flagged a keyframe: a decoder can start at it (every raw, JPEG and FFV1 frame; a
        /// hardware encoder's I-frames).
        public var isKeyframe: Bool
    }

    /// Calls `body` with each frame until the file ends or `body` returns false, as `forEach`.
    public static func forEachFrame(in path: String, _ body: (Frame) -> Bool) throws(MediaError) {
        var error = CMatroska_error()
        let result = withoutActuallyEscaping(body) { body in
            var handler = Handler(body: body)
            return withUnsafeMutablePointer(to: &handler) { handler in
                CMatroska_read_frames(
                    path,
                    { context, bytes, count, ns, keyframe in
                        let handler = context!.assumingMemoryBound(to: Handler.self)
                        let frame = Frame(
                            bytes: UnsafeRawBufferPointer(start: bytes, count: count), timeNs: ns, isKeyframe: keyframe)
                        return handler.pointee.body(frame) ? 0 : 1
                    }, handler, &error)
            }
        }
        if result < 0 { throw MediaError(cError: error, path: path) }
    }

    /// The video track's CodecPrivate (a decoder's setup: FFV1's configuration record); empty
    /// when the track has none. Throws when the file cannot be opened or has no video track.
    public static func codecPrivate(in path: String) throws(MediaError) -> [UInt8] {
        var error = CMatroska_error()
        var setup = [UInt8](repeating: 0, count: 4096)
        var size = CMatroska_codec_private(path, &setup, setup.count, &error)
        if size > setup.count {
            setup = [UInt8](repeating: 0, count: size)
            size = CMatroska_codec_private(path, &setup, setup.count, &error)
        }
        if size < 0 { throw MediaError(cError: error, path: path) }
        return Array(setup.prefix(size))
    }

    private struct Handler {
        let body: (Frame) -> Bool
    }
}
