import CTurboJPEG
import FieldcapCore
import FieldcapEncode

/// A camera frame as the pixels an image file takes: 8-bit grey (EuRoC's default, as its
/// cameras are), 8-bit RGB, or 16-bit grey (Y16, depth), rows packed.
package struct FramePixels {
    package enum Layout: Sendable {
        case grey8
        case rgb8
        case grey16
    }

    package var layout: Layout
    package var width: Int
    package var height: Int
    package var bytes: [UInt8]

    var channels: Int { layout == .rgb8 ? 3 : 1 }
    var bitDepth: Int { layout == .grey16 ? 16 : 8 }
    var stride: Int { width * channels * bitDepth / 8 }
}

/// Turns one camera's frames into `FramePixels`: grey from the frame's luma as it is (YUYV's
/// and NV12's Y, GREY; a 16-bit sample's high byte when 8 bits are asked; a Bayer mosaic's
/// bilinearly demosaiced luma, `BayerDemosaic`), 16-bit from Y16 and Z16 as they are, RGB
/// through libjpeg-turbo's YUV-to-RGB (`tjDecodeYUVPlanes`, BT.601 full range as JPEG's, each
/// chroma sample given to the pixels it was sampled from rather than interpolated, so a pixel's
/// colour is the camera's), or a Bayer mosaic's bilinear demosaic, MJPEG through its decoder.
///
/// Thread-bound: one per camera and thread (it owns libjpeg-turbo handles and plane buffers).
package final class PixelConverter {
    let format: VideoFormat
    let layout: FramePixels.Layout
    private let planes: YUVPlanes?
    private let demosaic: BayerDemosaic?
    /// YUV planes to RGB.
    private let decoder: tjhandle?
    /// MJPEG frames to pixels.
    private let jpeg: JPEGDecoder?
    /// An MJPEG frame whose header gives another size than the stream's is refused before it is
    /// decoded (a corrupt header can claim 65535 squared), rather than decoded at its own size.
    package var requiresRecordedSize = false

    /// The layouts a format can give: 16-bit only from Y16 and Z16; RGB not from them.
    static func problem(_ layout: FramePixels.Layout, from format: VideoFormat) -> String? {
        switch (layout, format.pixelFormat) {
        case (.grey16, .y16), (.grey16, .z16), (.grey8, _): return nil
        case (.grey16, _): return "\(format.pixelFormat.rawValue) has no 16-bit samples"
        case (.rgb8, .y16), (.rgb8, .z16): return "\(format.pixelFormat.rawValue) has no colour"
        case (.rgb8, _): return nil
        }
    }

    package init(format: VideoFormat, layout: FramePixels.Layout) throws(ExportError) {
        if let problem = Self.problem(layout, from: format) { throw ExportError(.request, problem) }
        self.format = format
        self.layout = layout
        demosaic = format.pixelFormat.bayerPattern.flatMap {
            BayerDemosaic(pattern: $0, width: format.width, height: format.height)
        }
        if format.pixelFormat.bayerPattern != nil && demosaic == nil {
            throw ExportError(.session, "\(format): a Bayer mosaic is whole 2x2 blocks")
        }
        let needsPlanes = layout == .rgb8 && format.pixelFormat != .mjpeg && demosaic == nil
        planes = needsPlanes ? YUVPlanes(format: format) : nil
        if needsPlanes && planes == nil {
            throw ExportError(.session, "\(format): \(YUVPlanes.problem(with: format) ?? "not YUV")")
        }
        decoder = needsPlanes ? tjInitDecompress() : nil
        if needsPlanes && decoder == nil { throw ExportError(.output, "libjpeg-turbo could not start a decoder") }
        do { jpeg = format.pixelFormat == .mjpeg ? try JPEGDecoder() : nil } catch {
            throw ExportError(.output, "\(error)")
        }
    }

    deinit { if let decoder { tjDestroy(decoder) } }

    package func pixels(_ frame: [UInt8]) throws(ExportError) -> FramePixels {
        let width = format.width, height = format.height
        let count = width * height
        if format.pixelFormat == .mjpeg { return try decodeJPEG(frame) }
        let needed = format.pixelFormat.frameBytes(width: width, height: height) ?? 0
        guard frame.count >= needed else {
            throw ExportError(.session, "a \(format) frame of \(frame.count) bytes is short of \(needed)")
        }
        switch (layout, format.pixelFormat) {
        case (.grey8, .grey), (.grey16, .y16), (.grey16, .z16):
            return FramePixels(layout: layout, width: width, height: height, bytes: Array(frame[0..<needed]))
        case (.grey8, .nv12):
            return FramePixels(layout: .grey8, width: width, height: height, bytes: Array(frame[0..<count]))
        case (.grey8, .yuyv), (.grey8, .y16), (.grey8, .z16):
            // YUYV's luma is every even byte; a little-endian 16-bit sample's high byte every odd one.
            let offset = format.pixelFormat == .yuyv ? 0 : 1
            let grey = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                frame.withUnsafeBufferPointer { source in
                    for index in 0..<count { buffer[index] = source[index * 2 + offset] }
                }
                initialized = count
            }
            return FramePixels(layout: .grey8, width: width, height: height, bytes: grey)
        case (_, .bayerBGGR), (_, .bayerGBRG), (_, .bayerGRBG), (_, .bayerRGGB):
            guard let demosaic else { throw ExportError(.output, "no demosaic for \(format)") }
            let channels = layout == .rgb8 ? 3 : 1
            let pixels = [UInt8](unsafeUninitializedCapacity: count * channels) { buffer, initialized in
                frame.withUnsafeBufferPointer { source in
                    if layout == .rgb8 {
                        demosaic.rgb(from: source.baseAddress!, into: buffer.baseAddress!)
                    } else {
                        demosaic.luma(from: source.baseAddress!, into: buffer.baseAddress!)
                    }
                }
                initialized = count * channels
            }
            return FramePixels(layout: layout, width: width, height: height, bytes: pixels)
        default:
            return try decodeYUV(frame)
        }
    }

    private func decodeYUV(_ frame: [UInt8]) throws(ExportError) -> FramePixels {
        let width = format.width, height = format.height
        guard let planes, let decoder else { throw ExportError(.output, "no colour conversion for \(format)") }
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        let result = frame.withUnsafeBytes { source -> Int32 in
            guard let split = planes.split(source) else { return -1 }
            var yuv = split.planes
            return rgb.withUnsafeMutableBufferPointer { out in
                tjDecodeYUVPlanes(
                    decoder, &yuv, split.strides, Int32(planes.subsampling.rawValue), out.baseAddress, Int32(width),
                    Int32(width * 3), Int32(height), Int32(TJPF_RGB.rawValue), TJFLAG_FASTUPSAMPLE)
            }
        }
        guard result == 0 else { throw ExportError(.output, "libjpeg-turbo: \(message(decoder))") }
        return FramePixels(layout: .rgb8, width: width, height: height, bytes: rgb)
    }

    private func decodeJPEG(_ frame: [UInt8]) throws(ExportError) -> FramePixels {
        guard let jpeg else { throw ExportError(.output, "no JPEG decoder") }
        let layout: FramePixels.Layout = self.layout == .rgb8 ? .rgb8 : .grey8
        let size = requiresRecordedSize ? (width: format.width, height: format.height) : nil
        do {
            let decoded = try frame.withUnsafeBytes {
                try jpeg.decode($0, to: layout == .rgb8 ? .rgb8 : .grey8, size: size)
            }
            return FramePixels(layout: layout, width: decoded.width, height: decoded.height, bytes: decoded.bytes)
        } catch {
            throw ExportError(.session, "\(error)")
        }
    }

    private func message(_ handle: tjhandle) -> String { String(cString: tjGetErrorStr2(handle)) }
}
