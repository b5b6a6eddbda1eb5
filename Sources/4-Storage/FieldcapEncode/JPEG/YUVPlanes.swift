import CTurboJPEG
import FieldcapCore

/// A raw frame as the separate Y, U and V planes libjpeg-turbo's YUV entry points take
/// (`tjCompressFromYUVPlanes`, `tjDecodeYUVPlanes`): YUYV split into 4:2:2 planes, NV12's
/// interleaved chroma into two 4:2:0 planes, GREY as its one plane. The frame's colour is not
/// converted: the planes are its own samples. A Bayer mosaic has no YUV samples of its own: it
/// is demosaiced into 4:2:0 planes (`BayerDemosaic`: bilinear luma, each 2x2 block's chroma).
///
/// Thread-bound: it owns the planes it splits into, made once and reused per frame.
public final class YUVPlanes {
    public let format: VideoFormat
    /// libjpeg-turbo's name for the planes' chroma subsampling.
    public let subsampling: TJSAMP
    private var luma: UnsafeMutablePointer<UInt8>?
    private var chroma: (u: UnsafeMutablePointer<UInt8>, v: UnsafeMutablePointer<UInt8>)?
    private let demosaic: BayerDemosaic?

    /// Whether `format`'s frames are YUV planes (YUYV, NV12, GREY) of a size they can have.
    public static func problem(with format: VideoFormat) -> String? {
        switch format.pixelFormat {
        case .yuyv, .nv12, .grey: break
        case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            guard format.width >= 2, format.height >= 2, format.width % 2 == 0, format.height % 2 == 0 else {
                return "\(format): a Bayer mosaic is whole 2x2 blocks"
            }
        case .y16, .z16, .mjpeg, .ffv1, .h264, .hevc, .fwht:
            return "\(format.pixelFormat.rawValue) frames are not YUV planes"
        }
        guard format.width > 0, format.height > 0, format.width % 2 == 0 || format.pixelFormat == .grey,
            format.height % 2 == 0 || format.pixelFormat != .nv12
        else { return "\(format): odd sizes are not YUV" }
        return nil
    }

    /// nil for a format `problem(with:)` refuses.
    public init?(format: VideoFormat) {
        guard Self.problem(with: format) == nil else { return nil }
        self.format = format
        let width = format.width, height = format.height
        demosaic = format.pixelFormat.bayerPattern.flatMap { BayerDemosaic(pattern: $0, width: width, height: height) }
        switch format.pixelFormat {
        case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            subsampling = TJSAMP_420
            luma = .allocate(capacity: width * height)
            chroma = (.allocate(capacity: width / 2 * height / 2), .allocate(capacity: width / 2 * height / 2))
        case .yuyv:
            subsampling = TJSAMP_422
            luma = .allocate(capacity: width * height)
            chroma = (.allocate(capacity: width / 2 * height), .allocate(capacity: width / 2 * height))
        case .nv12:
            subsampling = TJSAMP_420
            chroma = (.allocate(capacity: width / 2 * height / 2), .allocate(capacity: width / 2 * height / 2))
        default: subsampling = TJSAMP_GRAY
        }
    }

    deinit {
        luma?.deallocate()
        chroma?.u.deallocate()
        chroma?.v.deallocate()
    }

    /// The frame's planes (nil for the chroma of GREY) and their strides, valid until the next
    /// call; nil when `frame` is shorter than a frame of the format.
    public func split(_ frame: UnsafeRawBufferPointer) -> (planes: [UnsafePointer<UInt8>?], strides: [Int32])? {
        let width = format.width, height = format.height
        let needed = format.pixelFormat.frameBytes(width: width, height: height) ?? 0
        guard frame.count >= needed, let source = frame.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            return nil
        }
        if let demosaic {
            let (y, (u, v)) = (luma!, chroma!)
            demosaic.planes(from: source, luma: y, u: u, v: v)
            return (
                [UnsafePointer(y), UnsafePointer(u), UnsafePointer(v)],
                [Int32(width), Int32(width / 2), Int32(width / 2)]
            )
        }
        switch format.pixelFormat {
        case .yuyv:
            let (y, (u, v)) = (luma!, chroma!)
            // Y0 U Y1 V: every even byte is luma, the odd ones alternate U and V.
            for index in 0..<(width * height / 2) {
                let packed = source + index * 4
                y[index * 2] = packed[0]
                u[index] = packed[1]
                y[index * 2 + 1] = packed[2]
                v[index] = packed[3]
            }
            return (
                [UnsafePointer(y), UnsafePointer(u), UnsafePointer(v)],
                [Int32(width), Int32(width / 2), Int32(width / 2)]
            )
        case .nv12:
            let (u, v) = chroma!
            let interleaved = source + width * height
            for index in 0..<(width / 2 * height / 2) {
                u[index] = interleaved[index * 2]
                v[index] = interleaved[index * 2 + 1]
            }
            return ([source, UnsafePointer(u), UnsafePointer(v)], [Int32(width), Int32(width / 2), Int32(width / 2)])
        default:
            return ([source, nil, nil], [Int32(width), 0, 0])
        }
    }
}
