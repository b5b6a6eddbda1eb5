import CMatroska
import FieldcapCore

#if canImport(Glibc)
    import Glibc
#endif

/// Rewrites a Matroska file that was never finished (the recorder was killed) into one that
/// plays to its last complete frame: every whole frame is read back with libmatroska and written
/// again, at its own time, through `MatroskaWriter`, which closes the file properly (duration,
/// Segment size). A frame cut short by the end of the file is left out: a raw frame must have
/// its format's exact size, an MJPEG frame must end with its end-of-image marker.
public enum MatroskaSalvage {
    /// Salvages `path` in place, keeping at most `limit` frames (the first ones), and returns
    /// how many frames it now holds. A file without even a readable header becomes a valid file
    /// with no frames.
    public static func salvage(
        path: String, format: VideoFormat, nominalRate: Double, limit: Int? = nil
    ) throws(MediaError) -> Int {
        let temporary = path + ".salvage"
        // Encoded frames need what they were coded with (FFV1's configuration record, FWHT's
        // BITMAPINFOHEADER, H.264's parameter sets).
        let setup =
            VideoFormat.PixelFormat.storedOnly.contains(format.pixelFormat)
            ? try MatroskaFrames.codecPrivate(in: path) : []
        let writer = try MatroskaWriter(path: temporary, format: format, nominalRate: nominalRate, codecPrivate: setup)
        var failure: MediaError?
        forEachWholeFrame(in: path, format: format) { frame in
            if let limit, writer.frameCount >= limit { return false }
            // Keyframe flags as written: a hardware encoder's P-frames are not places to seek to.
            do throws(MediaError) {
                try writer.writeFrame(frame.bytes, captureNs: frame.timeNs, keyframe: frame.isKeyframe)
            } catch {
                failure = error
                return false
            }
            return true
        }
        if let failure { throw failure }
        try writer.finish()
        guard rename(temporary, path) == 0 else { throw .system(errno, "rename", path: path) }
        return writer.frameCount
    }

    /// The whole frames `path` holds, read without changing it (for a disk too full to rewrite
    /// the file: it plays to that frame as it is).
    public static func countFrames(path: String, format: VideoFormat) -> Int {
        var count = 0
        forEachWholeFrame(in: path, format: format) { _ in
            count += 1
            return true
        }
        return count
    }

    /// Makes `path`, a file `MatroskaWriter` wrote, finished or not, a finished file of its first
    /// `keep` frames without rewriting it: it ends after the last frame kept, with the Segment
    /// size and duration `finish` would have written. An hour of video is finished at once, on a
    /// disk with no room for a copy. Returns false, having changed nothing, for a file in another
    /// layout (another writer's, a remux with an index) or with fewer frames.
    public static func finishInPlace(path: String, keeping keep: Int, nominalRate: Double) throws(MediaError) -> Bool {
        var error = CMatroska_error()
        let periodTicks = MatroskaWriter.framePeriodTicks(nominalRate: nominalRate)
        switch CMatroska_finish_in_place(path, keep, periodTicks, MatroskaWriter.writingApp, &error) {
        case 0: return true
        case 1: return false
        default: throw MediaError(cError: error, path: path)
        }
    }

    /// Whether a frame of `size` bytes can be whole in `format`, as far as its size tells: a raw
    /// frame has its format's exact size (an MJPEG frame's end-of-image marker needs its bytes; an
    /// FFV1 frame is whole when its block is).
    static func mayBeWhole(size: UInt64, format: VideoFormat) -> Bool {
        guard let expected = format.pixelFormat.frameBytes(width: format.width, height: format.height) else {
            return size >= (format.pixelFormat == .mjpeg ? 2 : 1)
        }
        return size == UInt64(expected)
    }

    /// Calls `body` with each frame's bytes and time (ns on the file's timeline) until the first
    /// frame cut short by the end of the file, or until `body` returns false.
    private static func forEachWholeFrame(
        in path: String, format: VideoFormat, _ body: (MatroskaFrames.Frame) -> Bool
    ) {
        let reader = FrameReader(
            expectedBytes: format.pixelFormat.frameBytes(width: format.width, height: format.height),
            endsWithMarker: format.pixelFormat == .mjpeg)
        // A file that cannot be opened holds no frame.
        try? MatroskaFrames.forEachFrame(in: path) { frame in reader.isWhole(frame.bytes) && body(frame) }
    }

    private struct FrameReader {
        let expectedBytes: Int?
        let endsWithMarker: Bool

        /// Whether a frame is whole: a raw frame has its format's size, an MJPEG frame ends with
        /// its end-of-image marker, an FFV1 or hardware-coded frame is whole when its block is (the reader gives no
        /// frame of a block cut short; its slices' CRCs tell a decoder of any other damage).
        func isWhole(_ bytes: UnsafeRawBufferPointer) -> Bool {
            if let expectedBytes { return bytes.count == expectedBytes }
            guard endsWithMarker else { return bytes.count > 0 }
            return bytes.count >= 2 && bytes[bytes.count - 2] == 0xFF && bytes[bytes.count - 1] == 0xD9
        }
    }
}
