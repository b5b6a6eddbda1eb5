import CAVCodec
import FieldcapEncode

/// One H.264 video as an MP4 file, through FFmpeg's libavformat (its `mp4` muxer: the one
/// ffmpeg itself writes, which browsers, phones and the AllSpark server's page play). The index
/// goes to the front once the file is whole (`+faststart`), so a browser plays it as it
/// downloads.
///
/// Thread-bound: one writer.
final class MP4Writer {
    let path: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private let stream: UnsafeMutablePointer<AVStream>
    private let encoderTimeBase: AVRational
    /// Each packet's duration, in the encoder's time base, where the encoder gives none.
    private let frameDuration: Int64
    private var finished = false

    /// A file at `path` (which must not exist yet: the export's staging) for `encoder`'s packets.
    /// `frameDuration` (in `H264Encoder.timeBase`) is how long the last frame shows: the muxer
    /// takes the others' from the times between frames, and ends the file's edit list at the last
    /// frame's time plus its duration. Without one, players (ffmpeg, ffprobe, browsers) drop the
    /// last frame.
    init(path: String, encoder: H264Encoder, frameDuration: Int64) throws(ExportError) {
        self.path = path
        self.frameDuration = max(1, frameDuration)
        do throws(EncodeError) { try LibAVCodec.loadFormat(for: "An MP4 export") } catch {
            throw ExportError(.output, error.description)
        }
        var context: UnsafeMutablePointer<AVFormatContext>?
        let allocated = CAVCodec_avformat_alloc_output_context2(&context, nil, "mp4", path)
        guard allocated >= 0, let context else { throw Self.failure("avformat_alloc_output_context2", allocated, path) }
        self.context = context
        guard let stream = CAVCodec_avformat_new_stream(context, nil) else {
            // Not every property is set yet, so deinit will not run: freed here.
            CAVCodec_avformat_free_context(context)
            throw ExportError(.output, "\(path): avformat_new_stream failed (out of memory)")
        }
        self.stream = stream
        encoderTimeBase = H264Encoder.timeBase
        // From here every property is set: a throw runs deinit, which closes and frees.
        stream.pointee.time_base = H264Encoder.timeBase
        let copied = CAVCodec_avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context)
        guard copied >= 0 else { throw Self.failure("avcodec_parameters_from_context", copied, path) }
        let opened = CAVCodec_avio_open(&context.pointee.pb, path, AVIO_FLAG_WRITE)
        guard opened >= 0 else { throw Self.failure("open", opened, path) }
        var options: OpaquePointer?
        defer { CAVCodec_av_dict_free(&options) }
        CAVCodec_av_dict_set(&options, "movflags", "+faststart", 0)
        let header = CAVCodec_avformat_write_header(context, &options)
        guard header >= 0 else { throw Self.failure("avformat_write_header", header, path) }
    }

    deinit {
        guard let context else { return }
        // avio_closep takes a NULL pb (the file never opened).
        if !finished { _ = CAVCodec_avio_closep(&context.pointee.pb) }
        CAVCodec_avformat_free_context(context)
    }

    /// Writes one of the encoder's packets (libavformat takes its data).
    func write(_ packet: UnsafeMutablePointer<AVPacket>) throws(ExportError) {
        guard let context else { return }
        packet.pointee.stream_index = stream.pointee.index
        if packet.pointee.duration <= 0 { packet.pointee.duration = frameDuration }
        CAVCodec_av_packet_rescale_ts(packet, encoderTimeBase, stream.pointee.time_base)
        let written = CAVCodec_av_interleaved_write_frame(context, packet)
        guard written >= 0 else { throw Self.failure("av_interleaved_write_frame", written, path) }
    }

    /// Writes the index (moved to the front) and closes the file.
    func finish() throws(ExportError) {
        guard let context, !finished else { return }
        finished = true
        let trailer = CAVCodec_av_write_trailer(context)
        let closed = CAVCodec_avio_closep(&context.pointee.pb)
        guard trailer >= 0 else { throw Self.failure("av_write_trailer", trailer, path) }
        guard closed >= 0 else { throw Self.failure("close", closed, path) }
    }

    private static func failure(_ operation: String, _ code: Int32, _ path: String) -> ExportError {
        ExportError(.output, "\(path): \(operation) failed: \(LibAVCodec.message(code))")
    }
}
