import CAVCodec
import FieldcapCore

/// H.264 through libx264 (by FFmpeg's libavcodec), for a video anyone can play: 8-bit 4:2:0,
/// High profile, what browsers, phones and AllSpark's server page decode. Lossy: the session's
/// own video stays what it was; this is the copy for people and players.
///
/// Frames carry their own times (`pts` in `timeBase`), so a camera's uneven intervals and
/// dropped frames stay where they were rather than being evened out to a nominal rate.
///
/// One thread (libavcodec's `threads=1`): it runs beside a recording on a rig, where capture
/// and the writers keep the other cores.
///
/// Thread-bound: one caller at a time.
public final class H264Encoder {
    /// 1/90000 s, MPEG's clock: exact for every common frame rate, and fine enough for a
    /// camera's own intervals.
    public static let timeBase = AVRational(num: 1, den: 90_000)

    /// How the picture is encoded: libx264's constant rate factor (0 lossless to 51; 23 its
    /// default) and preset (speed against size).
    public struct Settings: Sendable {
        public var quality = 23
        public var preset = "veryfast"
        /// A keyframe at least this often, in frames.
        public var keyframeInterval = 60
        /// Frames a second, nominal: x264 picks its level (what a player must decode) from it;
        /// the frames keep their own times.
        public var framesPerSecond = 30.0
        /// Samples span 0-255 (JPEG's, a demosaic's BT.601 full range), told to players so
        /// they do not stretch them again; else the range is left unsaid, as V4L2's YUV
        /// cameras leave it.
        public var fullRange = false

        public init() {}
    }

    public let width: Int
    public let height: Int
    /// The encoder's parameters, for a muxer's stream (`avcodec_parameters_from_context`).
    public let context: UnsafeMutablePointer<AVCodecContext>
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var contextToFree: UnsafeMutablePointer<AVCodecContext>?

    /// Why a picture of this size cannot be H.264 4:2:0 (odd sizes), or nil.
    public static func problem(width: Int, height: Int) -> String? {
        guard width > 0, height > 0, width % 2 == 0, height % 2 == 0 else {
            return "\(width)x\(height): H.264 4:2:0 needs an even width and height"
        }
        return nil
    }

    /// `globalHeader`: the configuration (SPS, PPS) in `extradata` rather than before each
    /// keyframe, as MP4 wants it.
    public init(width: Int, height: Int, settings: Settings = Settings(), globalHeader: Bool) throws(EncodeError) {
        if let problem = Self.problem(width: width, height: height) { throw EncodeError(.unsupportedFormat, problem) }
        try LibAVCodec.load(for: "H.264")
        self.width = width
        self.height = height
        let what = "\(width)x\(height)"
        guard let codec = CAVCodec_avcodec_find_encoder_by_name("libx264") else {
            throw EncodeError(
                .unavailable,
                "H.264 needs libavcodec's libx264 encoder, which \(String(cString: CAVCodec_library_name())) "
                    + "lacks (Debian's has it: apt install libavcodec59)"
            )
        }
        guard let context = CAVCodec_avcodec_alloc_context3(codec) else {
            throw EncodeError(.encoder, "H.264 \(what): out of memory")
        }
        self.context = context
        contextToFree = context
        context.pointee.width = Int32(width)
        context.pointee.height = Int32(height)
        context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        context.pointee.time_base = Self.timeBase
        context.pointee.thread_count = 1
        context.pointee.gop_size = Int32(settings.keyframeInterval)
        // Without it libx264 takes the rate from the 1/90000 time base and picks the highest
        // level, which some phones' decoders refuse.
        let rate = max(1, min(1000, settings.framesPerSecond))
        context.pointee.framerate = AVRational(num: Int32((rate * 1000).rounded()), den: 1000)
        if settings.fullRange { context.pointee.color_range = AVCOL_RANGE_JPEG }
        if globalHeader { context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER) }
        var options: OpaquePointer?
        defer { CAVCodec_av_dict_free(&options) }
        for (key, value) in [("crf", "\(settings.quality)"), ("preset", settings.preset), ("profile", "high")] {
            CAVCodec_av_dict_set(&options, key, value, 0)
        }
        let opened = CAVCodec_avcodec_open2(context, codec, &options)
        guard opened == 0 else { throw LibAVCodec.failure("avcodec_open2", opened, what, codec: "H.264") }
        // Kept as they come, so deinit frees whichever was made.
        frame = CAVCodec_av_frame_alloc()
        packet = CAVCodec_av_packet_alloc()
        guard let frame, packet != nil else { throw EncodeError(.encoder, "H.264 \(what): out of memory") }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        let allocated = CAVCodec_av_frame_get_buffer(frame, 0)
        guard allocated == 0 else { throw LibAVCodec.failure("av_frame_get_buffer", allocated, what, codec: "H.264") }
    }

    deinit {
        CAVCodec_av_packet_free(&packet)
        CAVCodec_av_frame_free(&frame)
        CAVCodec_avcodec_free_context(&contextToFree)
    }

    /// The planes a picture is written into: Y at full size, U and V at half width and height.
    public struct Planes {
        public var y: UnsafeMutablePointer<UInt8>
        public var u: UnsafeMutablePointer<UInt8>
        public var v: UnsafeMutablePointer<UInt8>
        public var yStride: Int
        public var uStride: Int
        public var vStride: Int
    }

    /// A packet the encoder made, valid during the call it is given to.
    public typealias Emit = (UnsafeMutablePointer<AVPacket>) throws -> Void

    /// Encodes one picture, which `fill` writes, shown at `pts` (in `timeBase`, increasing);
    /// gives `emit` each packet that is ready (the encoder holds a few frames back).
    public func encode(pts: Int64, fill: (Planes) throws -> Void, emit: Emit) throws {
        guard let frame else { return }
        let writable = CAVCodec_av_frame_make_writable(frame)
        guard writable == 0 else {
            throw LibAVCodec.failure("av_frame_make_writable", writable, "\(width)x\(height)", codec: "H.264")
        }
        try fill(
            Planes(
                y: CAVCodec_frame_plane(frame, 0), u: CAVCodec_frame_plane(frame, 1), v: CAVCodec_frame_plane(frame, 2),
                yStride: Int(CAVCodec_frame_stride(frame, 0)), uStride: Int(CAVCodec_frame_stride(frame, 1)),
                vStride: Int(CAVCodec_frame_stride(frame, 2))))
        frame.pointee.pts = pts
        let sent = CAVCodec_avcodec_send_frame(context, frame)
        guard sent == 0 else {
            throw LibAVCodec.failure("avcodec_send_frame", sent, "\(width)x\(height)", codec: "H.264")
        }
        try receive(emit: emit)
    }

    /// Gives `emit` the packets of the frames still held.
    public func finish(emit: Emit) throws {
        let sent = CAVCodec_avcodec_send_frame(context, nil)
        guard sent == 0 || sent == CAVCodec_AVERROR_EOF() else {
            throw LibAVCodec.failure("avcodec_send_frame (drain)", sent, "\(width)x\(height)", codec: "H.264")
        }
        try receive(emit: emit)
    }

    private func receive(emit: Emit) throws {
        guard let packet else { return }
        while true {
            let received = CAVCodec_avcodec_receive_packet(context, packet)
            if received == CAVCodec_AVERROR(EAGAIN) || received == CAVCodec_AVERROR_EOF() { return }
            guard received == 0 else {
                throw LibAVCodec.failure("avcodec_receive_packet", received, "\(width)x\(height)", codec: "H.264")
            }
            defer { CAVCodec_av_packet_unref(packet) }
            try emit(packet)
        }
    }
}
