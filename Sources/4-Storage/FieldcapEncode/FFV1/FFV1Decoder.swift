import CAVCodec
import FieldcapCore

/// Decodes the FFV1 frames `FFV1Encoder` wrote back into the camera's own layout (YUYV, NV12,
/// GREY, Y16, Z16 bytes, exactly as captured), so whatever reads raw frames reads these.
///
/// Thread-bound.
public final class FFV1Decoder {
    /// The captured format the frames decode to.
    public let format: VideoFormat
    private let planes: FFV1Planes
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    /// One coded frame with the zeroed tail libavcodec's bitstream reader may read past its end.
    private var input: [UInt8] = []

    /// A decoder for a track whose CodecPrivate is `codecPrivate`, of frames captured as `format`.
    public init(format: VideoFormat, codecPrivate: [UInt8]) throws(EncodeError) {
        guard let planes = FFV1Planes(format: format) else {
            throw EncodeError(.unsupportedFormat, FFV1Planes.problem(with: format) ?? "\(format): not FFV1")
        }
        try LibAVCodec.load()
        self.format = format
        self.planes = planes
        guard let codec = CAVCodec_avcodec_find_decoder(AV_CODEC_ID_FFV1),
            let context = CAVCodec_avcodec_alloc_context3(codec)
        else { throw EncodeError(.unavailable, "libavcodec has no FFV1 decoder") }
        self.context = context
        context.pointee.width = Int32(format.width)
        context.pointee.height = Int32(format.height)
        if !codecPrivate.isEmpty {
            // libavcodec frees the context's extradata: it must be its own allocation, padded.
            let padded = codecPrivate.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)
            guard let extradata = CAVCodec_av_mallocz(padded)?.assumingMemoryBound(to: UInt8.self) else {
                throw EncodeError(.encoder, "FFV1 \(format): out of memory")
            }
            extradata.update(from: codecPrivate, count: codecPrivate.count)
            context.pointee.extradata = extradata
            context.pointee.extradata_size = Int32(codecPrivate.count)
        }
        let opened = CAVCodec_avcodec_open2(context, codec, nil)
        guard opened == 0 else { throw LibAVCodec.failure("avcodec_open2 (decoder)", opened, format.description) }
        guard let frame = CAVCodec_av_frame_alloc(), let packet = CAVCodec_av_packet_alloc() else {
            throw EncodeError(.encoder, "FFV1 \(format): out of memory")
        }
        self.frame = frame
        self.packet = packet
    }

    deinit {
        CAVCodec_av_packet_free(&packet)
        CAVCodec_av_frame_free(&frame)
        CAVCodec_avcodec_free_context(&context)
    }

    /// Bytes of one decoded frame.
    public var frameBytes: Int { planes.frameBytes }

    /// Decodes one coded frame into the captured layout. Throws for a frame that does not decode
    /// (its slices' CRCs fail) or decodes to another size or layout.
    public func decode(_ coded: UnsafeRawBufferPointer) throws(EncodeError) -> [UInt8] {
        guard let packet, let frame else { throw EncodeError(.encoder, "FFV1 \(format): no decoder") }
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        if input.count < coded.count + padding { input = [UInt8](repeating: 0, count: coded.count + padding) }
        let decoded: Int32 = input.withUnsafeMutableBytes { buffer in
            buffer.copyMemory(from: coded)
            buffer.baseAddress!.advanced(by: coded.count).initializeMemory(as: UInt8.self, repeating: 0, count: padding)
            packet.pointee.data = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            packet.pointee.size = Int32(coded.count)
            defer {
                packet.pointee.data = nil
                packet.pointee.size = 0
            }
            let sent = CAVCodec_avcodec_send_packet(context, packet)
            guard sent == 0 else { return sent }
            return CAVCodec_avcodec_receive_frame(context, frame)
        }
        guard decoded == 0 else { throw LibAVCodec.failure("decoding a frame", decoded, format.description) }
        defer { CAVCodec_av_frame_unref(frame) }
        guard frame.pointee.width == Int32(format.width), frame.pointee.height == Int32(format.height),
            frame.pointee.format == planes.pixelFormat.rawValue
        else {
            throw EncodeError(
                .encoder,
                "FFV1 \(format): a frame decodes to \(frame.pointee.width)x\(frame.pointee.height) "
                    + "in libavcodec's format \(frame.pointee.format), not the captured format's planes"
            )
        }
        return [UInt8](unsafeUninitializedCapacity: planes.frameBytes) { buffer, initialized in
            planes.unpack(frame, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = planes.frameBytes
        }
    }
}
