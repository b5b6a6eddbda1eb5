import FieldcapCore

/// The encoders behind `encode=`: which can take a camera's format, and making one.
public enum VideoEncoders {
    /// Why `encoding` cannot store frames of `captured`, or nil when it can.
    public static func problem(_ encoding: VideoEncoding, for captured: VideoFormat) -> String? {
        if encoding == .ffv1, captured.pixelFormat == .mjpeg {
            return
                "encode=ffv1 keeps raw frames bit-exact; this camera sends "
                + "MJPEG, which is stored as it comes with encode=raw (the default)"
        }
        if case .hardware(let hardware) = encoding, captured.pixelFormat == .mjpeg {
            return
                "encode=\(hardware.codec.rawValue) takes raw frames; this camera sends "
                + "MJPEG, which is stored as it comes with encode=raw (the default)"
        }
        guard encoding.encodes(captured) else { return nil }
        switch encoding {
        case .raw: return nil
        case .ffv1:
            if let problem = FFV1Encoder.problem(with: captured) { return problem }
            do { try LibAVCodec.load() } catch { return error.description }
            return nil
        case .jpeg:
            switch captured.pixelFormat {
            case .yuyv, .nv12, .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
                return YUVPlanes.problem(with: captured)
            case .y16, .z16:
                return
                    "encode=jpeg takes 8-bit frames (YUYV, NV12, GREY, Bayer); "
                    + "\(captured.pixelFormat.rawValue) would lose its low bits: record it raw"
            case .mjpeg, .ffv1, .h264, .hevc, .fwht: return nil
            }
        case .hardware(let hardware):
            if let device = hardware.device {
                do { try V4L2Encoder.check(path: device, hardware.codec, from: captured.pixelFormat) } catch {
                    return "\(error)"
                }
                return nil
            }
            return V4L2Encoders.find(hardware.codec, from: captured.pixelFormat) == nil
                ? V4L2Encoders.noneFound(hardware.codec, from: captured.pixelFormat) : nil
        }
    }

    /// An encoder for `encoding` from `captured` frames at `nominalRate` (a hardware encoder's
    /// rate control needs it), or nil when the frames are stored as they come (`raw`, or an MJPEG
    /// camera's own JPEGs).
    /// `cameraBuffers`: the camera's buffers, which a hardware encoder imports (DMABUF) where it
    /// and the camera can; otherwise frames are copied into the encoder's own.
    public static func make(
        _ encoding: VideoEncoding, for captured: VideoFormat, nominalRate: Double = 0,
        cameraBuffers: SharedFrameBuffers? = nil
    ) throws -> FrameEncoder? {
        guard encoding.encodes(captured) else { return nil }
        if let problem = problem(encoding, for: captured) { throw EncodeError(.unsupportedFormat, problem) }
        switch encoding {
        case .raw: return nil
        case .jpeg(let quality):
            // The accurate DCT, libjpeg's default (GStreamer's jpegenc defaults to the fast one): a
            // recording is kept.
            return try JPEGEncoder(format: captured, quality: quality, fastDCT: false)
        case .ffv1: return try FFV1Encoder(format: captured)
        case .hardware(let hardware):
            return try V4L2Encoder(hardware, captured: captured, nominalRate: nominalRate, cameraBuffers: cameraBuffers)
        }
    }

    /// Why the software encoder of `codec` cannot run on this machine (its library is missing),
    /// or nil. Loads the library to find out.
    public static func unavailable(_ codec: String) -> String? {
        guard codec == "ffv1" else { return nil }
        do { try LibAVCodec.load() } catch { return error.description }
        return nil
    }

    /// The software encoders this build has, for `fieldcap list`: name, codec, input formats.
    public static let software: [(codec: String, library: String, from: [VideoFormat.PixelFormat])] = [
        ("jpeg", "libjpeg-turbo (TurboJPEG)", [.yuyv, .nv12, .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB]),
        (
            "ffv1", "FFmpeg's libavcodec, loaded when used",
            [.yuyv, .nv12, .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB, .y16, .z16]
        ),
    ]
}
