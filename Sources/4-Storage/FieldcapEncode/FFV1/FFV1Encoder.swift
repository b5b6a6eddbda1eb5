import CAVCodec
import FieldcapCore

/// Lossless FFV1 (RFC 9043) through FFmpeg's libavcodec, the codec's reference: version 3 with
/// 4 slices, each with a CRC (a damaged frame is detected by the decoder, not shown), every frame
/// a keyframe (a recording can be cut, recovered or segmented at any frame). The configuration
/// record goes to the video track (`codecPrivate`); decoded, each frame is the captured frame's
/// bytes exactly (`FFV1Decoder`).
///
/// One thread of its own (libavcodec's `threads=1`): the encoding worker is the thread, and a
/// rig's other cameras and its writer keep the other cores.
///
/// Thread-bound: an `EncodingWorker`'s thread.
public final class FFV1Encoder: FrameEncoder {
    /// FFV1's version (FFmpeg's `-level`): 3 is the one with slices, CRCs and a configuration
    /// record, what archives (and RFC 9043) use.
    public static let version = 3

    public let format: VideoFormat
    public let codecPrivate: [UInt8]
    public var name: String { "libavcodec" }
    public var encodedFormat: VideoFormat {
        VideoFormat(width: format.width, height: format.height, pixelFormat: .ffv1)
    }

    private let planes: FFV1Planes
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// The records of frames sent and not yet emitted, in order (FFV1 emits each at once; the
    /// seam allows an encoder that holds some).
    private var pending: [CaptureRecord] = []
    private var nextPts: Int64 = 0

    /// Why `format` cannot be encoded (a compressed or odd-sized format), or nil.
    public static func problem(with format: VideoFormat) -> String? { FFV1Planes.problem(with: format) }

    public init(format: VideoFormat) throws(EncodeError) {
        guard let planes = FFV1Planes(format: format) else {
            throw EncodeError(.unsupportedFormat, Self.problem(with: format) ?? "\(format): not FFV1")
        }
        try LibAVCodec.load()
        self.format = format
        self.planes = planes
        pending.reserveCapacity(8)
        guard let codec = CAVCodec_avcodec_find_encoder(AV_CODEC_ID_FFV1),
            let context = CAVCodec_avcodec_alloc_context3(codec)
        else {
            throw EncodeError(
                .unavailable,
                "\(String(cString: CAVCodec_library_name())) has no FFV1 encoder")
        }
        self.context = context
        context.pointee.width = Int32(format.width)
        context.pointee.height = Int32(format.height)
        context.pointee.pix_fmt = planes.pixelFormat
        // Matroska's 1 ms ticks; FFV1 codes no time, the container does.
        context.pointee.time_base = AVRational(num: 1, den: 1000)
        context.pointee.thread_count = 1
        var options: OpaquePointer?
        defer { CAVCodec_av_dict_free(&options) }
        for (key, value) in [("level", "\(Self.version)"), ("slices", "4"), ("slicecrc", "1"), ("g", "1")] {
            CAVCodec_av_dict_set(&options, key, value, 0)
        }
        let opened = CAVCodec_avcodec_open2(context, codec, &options)
        guard opened == 0 else { throw LibAVCodec.failure("avcodec_open2", opened, format.description) }
        codecPrivate =
            if let extradata = context.pointee.extradata, context.pointee.extradata_size > 0 {
                Array(UnsafeBufferPointer(start: extradata, count: Int(context.pointee.extradata_size)))
            } else { [] }
        guard !codecPrivate.isEmpty else {
            throw EncodeError(.encoder, "FFV1 \(format): libavcodec gave no configuration record")
        }
        guard let frame = CAVCodec_av_frame_alloc(), let packet = CAVCodec_av_packet_alloc() else {
            throw EncodeError(.encoder, "FFV1 \(format): out of memory")
        }
        self.frame = frame
        self.packet = packet
        frame.pointee.format = planes.pixelFormat.rawValue
        frame.pointee.width = Int32(format.width)
        frame.pointee.height = Int32(format.height)
        let allocated = CAVCodec_av_frame_get_buffer(frame, 0)
        guard allocated == 0 else { throw LibAVCodec.failure("av_frame_get_buffer", allocated, format.description) }
    }

    deinit {
        CAVCodec_av_packet_free(&packet)
        CAVCodec_av_frame_free(&frame)
        CAVCodec_avcodec_free_context(&context)
    }

    /// Intra-only (g=1) and one thread: each frame's packet comes out of its own `encode`.
    public var codesFramesAlone: Bool { true }

    public func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        guard frame.count >= planes.frameBytes, let planesFrame = self.frame else {
            throw EncodeError(
                .encoder, "FFV1 \(format): a frame of \(frame.count) bytes is short of \(planes.frameBytes)")
        }
        // The encoder keeps no reference to an intra frame, so the buffer is ours again; were it
        // still held, this would give the frame a fresh one.
        let writable = CAVCodec_av_frame_make_writable(planesFrame)
        guard writable == 0 else { throw LibAVCodec.failure("av_frame_make_writable", writable, format.description) }
        planes.pack(frame, into: planesFrame)
        planesFrame.pointee.pts = nextPts
        nextPts += 1
        pending.append(record)
        let sent = CAVCodec_avcodec_send_frame(context, planesFrame)
        guard sent == 0 else { throw LibAVCodec.failure("avcodec_send_frame", sent, format.description) }
        try receive(emit: emit)
    }

    public func drain(emit: FrameEncoder.Emit) throws {
        let sent = CAVCodec_avcodec_send_frame(context, nil)
        guard sent == 0 || sent == CAVCodec_AVERROR_EOF() else {
            throw LibAVCodec.failure("avcodec_send_frame (drain)", sent, format.description)
        }
        try receive(emit: emit)
    }

    /// Emits every packet the encoder has ready, each with its frame's record.
    private func receive(emit: FrameEncoder.Emit) throws {
        while true {
            let received = CAVCodec_avcodec_receive_packet(context, packet)
            if received == CAVCodec_AVERROR(EAGAIN) || received == CAVCodec_AVERROR_EOF() { return }
            guard received == 0, let packet else {
                throw LibAVCodec.failure("avcodec_receive_packet", received, format.description)
            }
            defer { CAVCodec_av_packet_unref(packet) }
            guard !pending.isEmpty else { throw EncodeError(.encoder, "FFV1 \(format): a packet for no frame") }
            let record = pending.removeFirst()
            try emit(
                EncodedFrame(
                    record: record,
                    bytes: UnsafeRawBufferPointer(start: packet.pointee.data, count: Int(packet.pointee.size))
                ))
        }
    }
}
