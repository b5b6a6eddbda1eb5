import CTurboJPEG

/// RGB pixels to a JPEG (libjpeg-turbo, 4:4:4: no colour lost again to subsampling): an MJPEG camera's frame
/// written again once its faces are covered in the decoded picture.
///
/// Thread-bound: one per camera and thread (it owns a libjpeg-turbo handle).
package final class RGBJPEGEncoder {
    let width: Int
    let height: Int
    let quality: Int
    private let handle: tjhandle

    package init(width: Int, height: Int, quality: Int) throws(ExportError) {
        guard let handle = tjInitCompress() else {
            throw ExportError(.output, "libjpeg-turbo could not start an encoder")
        }
        self.width = width
        self.height = height
        self.quality = quality
        self.handle = handle
    }

    deinit { tjDestroy(handle) }

    package func encode(_ rgb: [UInt8]) throws(ExportError) -> [UInt8] {
        guard rgb.count >= width * height * 3 else {
            throw ExportError(
                .output, "a \(width)x\(height) RGB picture holds \(width * height * 3) bytes, not \(rgb.count)")
        }
        var output: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let result = rgb.withUnsafeBufferPointer {
            tjCompress2(
                handle, $0.baseAddress, Int32(width), Int32(width * 3), Int32(height), Int32(TJPF_RGB.rawValue),
                &output,
                &size, Int32(TJSAMP_444.rawValue), Int32(quality), 0)
        }
        defer { if let output { tjFree(output) } }
        guard result == 0, let output else {
            throw ExportError(
                .output, "libjpeg-turbo could not encode a frame: \(String(cString: tjGetErrorStr2(handle)))")
        }
        return Array(UnsafeBufferPointer(start: output, count: Int(size)))
    }
}
