import CFFmpeg
import FieldcapCore

#if canImport(Glibc)
import Glibc
#endif

/// An error from FFmpeg's libraries: the file, the call and FFmpeg's own message.
public struct MediaError: Error, CustomStringConvertible, Equatable {
    public var path: String
    public var operation: String
    public var code: Int32
    public var message: String

    public var description: String { "\(operation) on \(path): \(message) (\(code))" }

    static func ffmpeg(_ code: Int32, _ operation: String, path: String) -> MediaError {
        var buffer = [CChar](repeating: 0, count: 128)
        let message = buffer.withUnsafeMutableBufferPointer { String(cString: CFFmpeg_av_err2str(code, $0.baseAddress, 128)) }
        return MediaError(path: path, operation: operation, code: code, message: message)
    }
}

/// FFmpeg's libraries, opened on first use (Sources/CFFmpeg/include/CFFmpeg.h says why).
public enum FFmpegLibrary {
    /// Opens libavformat if it is not open yet; the error says which library is missing and
    /// which Debian package has it.
    public static func load() throws(MediaError) {
        guard let problem = CFFmpeg_load() else { return }
        let library = String(cString: CFFmpeg_library_name())
        let package = library.replacingOccurrences(of: ".so.", with: "")
        throw MediaError(
            path: library, operation: "dlopen", code: -1,
            message: "\(String(cString: problem)); videos need FFmpeg's \(library) (Debian: apt install \(package))")
    }
}

/// Writes one camera stream into a Matroska file with FFmpeg's libavformat: raw frames losslessly
/// as `rawvideo`, MJPEG passed through. Each frame's presentation time is its capture time
/// relative to the stream's first frame, so the file keeps the real, variable timing.
///
/// Frames are not copied: the packet points at the caller's buffer for the duration of the
/// write. The file is written through our own descriptor (a custom AVIO context), so `sync` can
/// make it durable: the recorder calls it at least once a second.
///
/// Thread-bound (writer).
public final class MatroskaWriter {
    public let path: String
    public let format: VideoFormat
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var io: UnsafeMutablePointer<AVIOContext>?
    private var fd: Int32 = -1
    /// The first write error of the AVIO callbacks (they can only return a code).
    private var ioError: MediaError?
    private var stream: UnsafeMutablePointer<AVStream>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var firstNs: UInt64?
    private var lastPts: Int64 = -1
    private var finished = false
    /// Set once the header is written; before that there is no file to finish.
    private var headerWritten = false
    /// Frames written so far.
    public private(set) var frameCount = 0

    /// Creates (or replaces) `path` and writes the Matroska header.
    public init(path: String, format: VideoFormat, nominalRate: Double) throws(MediaError) {
        self.path = path
        self.format = format
        try FFmpegLibrary.load()
        var context: UnsafeMutablePointer<AVFormatContext>?
        var result = CFFmpeg_avformat_alloc_output_context2(&context, nil, "matroska", path)
        guard result >= 0, let context else { throw .ffmpeg(result, "avformat_alloc_output_context2", path: path) }
        self.context = context
        guard let stream = CFFmpeg_avformat_new_stream(context, nil) else {
            throw .ffmpeg(CFFmpeg_AVERROR(ENOMEM), "avformat_new_stream", path: path)
        }
        self.stream = stream
        let parameters = stream.pointee.codecpar!
        parameters.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        parameters.pointee.width = Int32(format.width)
        parameters.pointee.height = Int32(format.height)
        switch format.pixelFormat {
        case .mjpeg:
            parameters.pointee.codec_id = AV_CODEC_ID_MJPEG
        case .yuyv:
            Self.raw(parameters, AV_PIX_FMT_YUYV422, CFFmpeg_MKTAG(89, 85, 89, 50))  // YUY2
        case .nv12:
            Self.raw(parameters, AV_PIX_FMT_NV12, CFFmpeg_MKTAG(78, 86, 49, 50))  // NV12
        case .grey:
            Self.raw(parameters, AV_PIX_FMT_GRAY8, CFFmpeg_MKTAG(89, 56, 48, 48))  // Y800
        case .y16:
            Self.raw(parameters, AV_PIX_FMT_GRAY16LE, CFFmpeg_MKTAG(89, 49, 0, 16))  // Y1\0\16
        }
        // A nanosecond time base; the muxer rescales to Matroska's own (milliseconds by default).
        stream.pointee.time_base = AVRational(num: 1, den: 1_000_000_000)
        if nominalRate > 0 {
            stream.pointee.avg_frame_rate = CFFmpeg_av_d2q(nominalRate, 1_000_000)
        }
        // O_NOFOLLOW: a link planted in the session directory must not send the video elsewhere.
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw Self.system(errno, "open", path: path) }
        let bufferSize: Int32 = 1 << 20
        guard let buffer = CFFmpeg_av_malloc(Int(bufferSize)),
            let io = CFFmpeg_avio_alloc_context(
                buffer.assumingMemoryBound(to: UInt8.self), bufferSize, 1, Unmanaged.passUnretained(self).toOpaque(),
                nil, Self.writeCallback, Self.seekCallback)
        else { throw .ffmpeg(CFFmpeg_AVERROR(ENOMEM), "avio_alloc_context", path: path) }
        self.io = io
        context.pointee.pb = io
        // No CRC-32 elements: computing them over every cluster costs about 0.4 ms per 640x480
        // frame (measured on the host; far more on a small ARM core), three times the rest of the
        // muxing. Integrity comes from the fsync policy and the per-frame log instead.
        var options: OpaquePointer?
        CFFmpeg_av_dict_set(&options, "write_crc32", "0", 0)
        // Written as a live stream: no index (Cues) and no duration in the header. The muxer keeps
        // one index entry per keyframe (every raw or MJPEG frame is one) in memory until the
        // trailer: two 30 fps cameras grew the recorder by 17 MB an hour (about 80 bytes a
        // frame); live, its memory stays flat. Players play the file and demuxers read every
        // frame and its time; `ffmpeg -i cam.mkv -c copy indexed.mkv` adds an index.
        CFFmpeg_av_dict_set(&options, "live", "1", 0)
        defer { CFFmpeg_av_dict_free(&options) }
        result = CFFmpeg_avformat_write_header(context, &options)
        guard result >= 0 else { throw .ffmpeg(result, "avformat_write_header", path: path) }
        headerWritten = true
        packet = CFFmpeg_av_packet_alloc()
    }

    private static func system(_ code: Int32, _ operation: String, path: String) -> MediaError {
        MediaError(path: path, operation: operation, code: code, message: String(cString: strerror(code)))
    }

    // libavformat writes through these; `opaque` is the writer itself.
    private static let writeCallback: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = {
        opaque, bytes, count in
        let writer = Unmanaged<MatroskaWriter>.fromOpaque(opaque!).takeUnretainedValue()
        var offset = 0
        while offset < Int(count) {
            let written = Glibc.write(writer.fd, bytes! + offset, Int(count) - offset)
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                writer.ioError = writer.ioError ?? system(code, "write", path: writer.path)
                return CFFmpeg_AVERROR(code)
            }
            offset += written
        }
        return count
    }

    private static let seekCallback: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let writer = Unmanaged<MatroskaWriter>.fromOpaque(opaque!).takeUnretainedValue()
        if whence & 0x10000 != 0 {  // AVSEEK_SIZE: the file's size, without moving
            var info = stat()
            return fstat(writer.fd, &info) == 0 ? Int64(info.st_size) : -1
        }
        let position = lseek(writer.fd, off_t(offset), whence & ~0x20000)  // without AVSEEK_FORCE
        return position < 0 ? Int64(CFFmpeg_AVERROR(errno)) : Int64(position)
    }

    private static func raw(_ parameters: UnsafeMutablePointer<AVCodecParameters>, _ pixel: AVPixelFormat, _ tag: UInt32) {
        parameters.pointee.codec_id = AV_CODEC_ID_RAWVIDEO
        parameters.pointee.format = pixel.rawValue
        parameters.pointee.codec_tag = tag
    }

    deinit {
        if !finished { try? finish() }
        context?.pointee.pb = nil
        if let io {
            CFFmpeg_av_freep(&io.pointee.buffer)
            var owned: UnsafeMutablePointer<AVIOContext>? = io
            CFFmpeg_avio_context_free(&owned)
        }
        if fd >= 0 { Glibc.close(fd) }
        CFFmpeg_av_packet_free(&packet)
        CFFmpeg_avformat_free_context(context)
    }

    /// Makes every frame written so far durable (flush libavformat's buffer, then `fdatasync`).
    public func sync() throws(MediaError) {
        guard let context, let io, !finished else { return }
        // A NULL packet makes the Matroska muxer close the cluster it is collecting in memory.
        let result = CFFmpeg_av_write_frame(context, nil)
        CFFmpeg_avio_flush(io)
        if let ioError { throw ioError }
        guard result >= 0 else { throw .ffmpeg(result, "av_write_frame (flush)", path: path) }
        if fdatasync(fd) != 0 { throw Self.system(errno, "fdatasync", path: path) }
    }

    /// Writes one frame captured at `captureNs` (`CLOCK_MONOTONIC_RAW`).
    public func writeFrame(_ bytes: UnsafeRawBufferPointer, captureNs: UInt64) throws(MediaError) {
        guard let context, let stream, let packet, !finished else {
            throw MediaError(path: path, operation: "write frame", code: -1, message: "the file is already closed")
        }
        let first = firstNs ?? captureNs
        firstNs = first
        let relative = AVRational(num: 1, den: 1_000_000_000)
        // A time before the first frame's (a damaged file being salvaged) counts as the first's.
        let sinceFirst = captureNs >= first ? Int64(clamping: captureNs - first) : 0
        var pts = CFFmpeg_av_rescale_q(sinceFirst, relative, stream.pointee.time_base)
        // The muxer needs strictly increasing times; two frames in one tick of Matroska's clock
        // are nudged apart by one tick (capture_ns in the timestamps file stays exact).
        if pts <= lastPts { pts = lastPts + 1 }
        lastPts = pts
        packet.pointee.data = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
        packet.pointee.size = Int32(bytes.count)
        packet.pointee.stream_index = stream.pointee.index
        packet.pointee.pts = pts
        packet.pointee.dts = pts
        packet.pointee.flags = 1  // AV_PKT_FLAG_KEY: every raw or MJPEG frame stands alone
        let result = CFFmpeg_av_write_frame(context, packet)
        packet.pointee.data = nil
        packet.pointee.size = 0
        if let ioError { throw ioError }
        guard result >= 0 else { throw .ffmpeg(result, "av_write_frame", path: path) }
        frameCount += 1
    }

    /// Writes the trailer (index, duration) and closes the file.
    public func finish() throws(MediaError) {
        guard !finished, headerWritten, let context, let io else { return }
        finished = true
        let result = CFFmpeg_av_write_trailer(context)
        CFFmpeg_avio_flush(io)
        if let ioError { throw ioError }
        guard result >= 0 else { throw .ffmpeg(result, "av_write_trailer", path: path) }
        if fdatasync(fd) != 0 { throw Self.system(errno, "fdatasync", path: path) }
        // close is never retried: the descriptor is gone even when it reports EINTR.
        if Glibc.close(fd) != 0 && errno != EINTR { fd = -1; throw Self.system(errno, "close", path: path) }
        fd = -1
    }
}
