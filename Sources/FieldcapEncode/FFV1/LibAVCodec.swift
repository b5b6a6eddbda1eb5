import CAVCodec

/// FFmpeg's libavcodec, opened on first use (Sources/CAVCodec): its errors as text.
enum LibAVCodec {
    /// Opens libavcodec, or says why it cannot be, naming the library and the Debian package.
    static func load() throws(EncodeError) {
        guard let problem = CAVCodec_load() else { return }
        let library = String(cString: CAVCodec_library_name())
        throw EncodeError(
            .unavailable,
            "FFV1 needs FFmpeg's \(library) (Debian: the libavcodec package of that version, e.g. apt install libavcodec59): \(String(cString: problem))"
        )
    }

    /// libavcodec's message for an error code.
    static func message(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        guard CAVCodec_av_strerror(code, &buffer, buffer.count) == 0 else { return "error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// An error of `operation` (a libavcodec call) on `what` (an FFV1 stream's format).
    static func failure(_ operation: String, _ code: Int32, _ what: String) -> EncodeError {
        EncodeError(.encoder, "FFV1 \(what): \(operation) failed: \(message(code))")
    }
}
