import CFFmpeg
import FieldcapCore

#if canImport(Glibc)
import Glibc
#endif

/// Rewrites a Matroska file that was never finished (the recorder was killed) into one that
/// plays to its last complete frame: every whole frame is read back with libavformat and written
/// again, at its own time, through `MatroskaWriter`, which closes the file properly (index,
/// duration). A frame cut short by the end of the file is left out: a raw frame must have its
/// format's exact size, an MJPEG frame must end with its end-of-image marker.
public enum MatroskaSalvage {
    /// Salvages `path` in place and returns how many frames it now holds. A file without even a
    /// readable header becomes a valid file with no frames.
    public static func salvage(path: String, format: VideoFormat, nominalRate: Double) throws(MediaError) -> Int {
        try FFmpegLibrary.load()
        // libavformat reports the truncated end it will find ("File ended prematurely") on
        // stderr; that is the expected state of such a file, and recover says what it kept.
        let level = CFFmpeg_av_log_get_level()
        CFFmpeg_av_log_set_level(AV_LOG_QUIET)
        defer { CFFmpeg_av_log_set_level(level) }
        let temporary = path + ".salvage"
        let writer = try MatroskaWriter(path: temporary, format: format, nominalRate: nominalRate)
        var input: UnsafeMutablePointer<AVFormatContext>?
        if CFFmpeg_avformat_open_input(&input, path, nil, nil) == 0, let context = input {
            defer { CFFmpeg_avformat_close_input(&input) }
            if CFFmpeg_avformat_find_stream_info(context, nil) >= 0 && context.pointee.nb_streams > 0 {
                try copyFrames(from: context, into: writer, format: format)
            }
        }
        try writer.finish()
        guard rename(temporary, path) == 0 else {
            throw MediaError(path: path, operation: "rename", code: errno, message: String(cString: strerror(errno)))
        }
        return writer.frameCount
    }

    /// The whole frames `path` holds, read without changing it (for a disk too full to rewrite
    /// the file: it plays to that frame as it is).
    public static func countFrames(path: String, format: VideoFormat) -> Int {
        // Without FFmpeg no frame can be read back: none is counted.
        guard (try? FFmpegLibrary.load()) != nil else { return 0 }
        let level = CFFmpeg_av_log_get_level()
        CFFmpeg_av_log_set_level(AV_LOG_QUIET)
        defer { CFFmpeg_av_log_set_level(level) }
        var input: UnsafeMutablePointer<AVFormatContext>?
        guard CFFmpeg_avformat_open_input(&input, path, nil, nil) == 0, let context = input else { return 0 }
        defer { CFFmpeg_avformat_close_input(&input) }
        guard CFFmpeg_avformat_find_stream_info(context, nil) >= 0 && context.pointee.nb_streams > 0 else { return 0 }
        var count = 0
        forEachWholeFrame(in: context, format: format) { _, _ in count += 1 }
        return count
    }

    private static func copyFrames(
        from context: UnsafeMutablePointer<AVFormatContext>, into writer: MatroskaWriter, format: VideoFormat
    ) throws(MediaError) {
        var failure: MediaError?
        forEachWholeFrame(in: context, format: format) { bytes, ns in
            guard failure == nil else { return }
            do throws(MediaError) { try writer.writeFrame(bytes, captureNs: ns) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Calls `body` with each frame's bytes and time (ns from the first) until the first frame
    /// cut short by the end of the file.
    private static func forEachWholeFrame(
        in context: UnsafeMutablePointer<AVFormatContext>, format: VideoFormat, _ body: (UnsafeRawBufferPointer, UInt64) -> Void
    ) {
        let expectedBytes = format.pixelFormat.frameBytes(width: format.width, height: format.height)
        let timeBase = context.pointee.streams[0]!.pointee.time_base
        guard let packet = CFFmpeg_av_packet_alloc() else { return }
        var owned: UnsafeMutablePointer<AVPacket>? = packet
        defer { CFFmpeg_av_packet_free(&owned) }
        while CFFmpeg_av_read_frame(context, packet) >= 0 {
            defer { CFFmpeg_av_packet_unref(packet) }
            guard packet.pointee.stream_index == 0, let data = packet.pointee.data else { continue }
            let bytes = UnsafeRawBufferPointer(start: data, count: Int(packet.pointee.size))
            if let expectedBytes, bytes.count != expectedBytes { break }
            if expectedBytes == nil && !(bytes.count >= 2 && bytes[bytes.count - 2] == 0xFF && bytes[bytes.count - 1] == 0xD9) { break }
            let pts = packet.pointee.pts == Int64.min ? packet.pointee.dts : packet.pointee.pts
            let ns = CFFmpeg_av_rescale_q(max(0, pts), timeBase, AVRational(num: 1, den: 1_000_000_000))
            body(bytes, UInt64(ns))
        }
    }
}
