import CAVCodec

/// FFmpeg's libavcodec and libavformat, opened on first use (Sources/1-Platform/CAVCodec): their errors as
/// text.
public enum LibAVCodec {
    /// Opens libavcodec, or says why it cannot be, naming the library and the Debian package.
    /// `purpose`: what needs it, as the error begins ("FFV1", "H.264").
    public static func load(for purpose: String = "FFV1") throws(EncodeError) {
        guard let problem = CAVCodec_load() else { return }
        let library = String(cString: CAVCodec_library_name())
        throw EncodeError(
            .unavailable,
            "\(purpose) needs FFmpeg's \(library) (Debian: the libavcodec package of "
                + "that version, e.g. apt install libavcodec59): \(String(cString: problem))"
        )
    }

    /// Opens libavformat (and libavcodec), or says why it cannot be.
    public static func loadFormat(for purpose: String) throws(EncodeError) {
        try load(for: purpose)
        guard let problem = CAVFormat_load() else { return }
        let library = String(cString: CAVFormat_library_name())
        throw EncodeError(
            .unavailable,
            "\(purpose) needs FFmpeg's \(library) (Debian: the libavformat package of "
                + "that version, e.g. apt install libavformat59): \(String(cString: problem))"
        )
    }

    /// libavcodec's message for an error code.
    public static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard CAVCodec_av_strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An error of `operation` (a libavcodec call) on `what` (a stream's format), for `codec`.
    static func failure(_ operation: String, _ code: Int32, _ what: String, codec: String = "FFV1") -> EncodeError {
        EncodeError(.encoder, "\(codec) \(what): \(operation) failed: \(message(code))")
    }
}
