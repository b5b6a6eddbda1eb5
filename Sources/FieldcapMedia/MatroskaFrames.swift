import CMatroska

/// Reads a Matroska file's video frames back with libmatroska, in file order: what salvage and
/// `fieldcap extract` copy from, byte for byte.
public enum MatroskaFrames {
    /// Calls `body` with each frame's bytes and time (ns on the file's timeline) until the file
    /// ends or `body` returns false. Throws when the file cannot be opened or read.
    public static func forEach(
        in path: String, _ body: (UnsafeRawBufferPointer, UInt64) -> Bool
    ) throws(MediaError) {
        var error = CMatroska_error()
        let result = withoutActuallyEscaping(body) { body in
            var handler = Handler(body: body)
            return withUnsafeMutablePointer(to: &handler) { handler in
                CMatroska_read_frames(
                    path,
                    { context, bytes, count, ns in
                        let handler = context!.assumingMemoryBound(to: Handler.self)
                        return handler.pointee.body(UnsafeRawBufferPointer(start: bytes, count: count), ns) ? 0 : 1
                    }, handler, &error)
            }
        }
        if result < 0 { throw MediaError(cError: error, path: path) }
    }

    private struct Handler {
        let body: (UnsafeRawBufferPointer, UInt64) -> Bool
    }
}
