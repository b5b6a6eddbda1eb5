import CPNG

/// PNG files through libpng (the reference PNG library, what OpenCV and ffmpeg's readers are
/// tested against).
enum PNGEncoder {
    /// zlib level 1 with PNG's "sub" filter: a camera frame's PNG at about the size of level 6
    /// for a fraction of the time (sensor noise does not compress much at any level).
    static let defaultLevel: Int32 = 1

    static func encode(_ pixels: FramePixels, level: Int32 = defaultLevel) throws(ExportError) -> [UInt8] {
        var output = CPNG_output()
        defer { CPNG_free(&output) }
        var message = [CChar](repeating: 0, count: 256)
        let result = pixels.bytes.withUnsafeBytes { bytes in
            CPNG_encode(
                bytes.baseAddress, UInt32(pixels.width), UInt32(pixels.height), Int32(pixels.channels),
                Int32(pixels.bitDepth), pixels.stride, level, &output, &message)
        }
        guard result == 0 else {
            throw ExportError(
                .output,
                "libpng: \(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        return Array(UnsafeBufferPointer(start: output.bytes, count: output.count))
    }
}
