import FieldcapCore
import FieldcapEncode

/// Covers the faces of a camera's frames as its video stores them, and gives them back stored
/// the same way, so a covered video is the recorded one with only the faces changed:
/// - raw frames are covered in place;
/// - an MJPEG camera's are decoded to the YUV planes each JPEG holds, covered there and written
///   again as JPEG of the same subsampling at quality 95: no colour conversion and no chroma
///   resampled, so outside the boxes only the quantisation is done again (50 dB from the
///   recorded frame measured on the astronaut; through RGB and 4:4:4 it had been 38 dB as
///   FFmpeg decodes both);
/// - an FFV1 camera's are decoded, covered in the camera's own layout and coded again as FFV1,
///   so outside the boxes they still decode to the captured bytes.
///
/// Cameras coded across frames (H.264, HEVC, FWHT) are not covered: each frame would be decoded
/// and coded again with another encoder's losses, and a cut would need their references.
///
/// Thread-bound: one per camera.
public final class StoredFrameCover {
    /// The quality an MJPEG camera's covered frames are written again at.
    public static let recodedJPEGQuality = 95

    /// An MJPEG camera's is made again at its first frame, in the planes that frame holds.
    private var cover: FaceCover
    private let settings: FaceCover.Settings
    /// What the covered frames' video track is set up with (Matroska's CodecPrivate): the new
    /// FFV1 encoder's configuration record; empty for raw and MJPEG frames.
    public let codecPrivate: [UInt8]
    private let width: Int
    private let height: Int
    private let jpeg: (decoder: JPEGDecoder, encoder: YUVPlanesJPEGEncoder)?
    /// The subsampling of an MJPEG camera's first frame: every frame's, or it is refused.
    private var subsampling: JPEGSubsampling?
    /// An FFV1 camera's captured format, its encoder, and the decoder of the record its frames
    /// were coded with (`decode(with:)`; nil until one is given).
    private let ffv1: (format: VideoFormat, encoder: FFV1Encoder)?
    private var ffv1Decoder: (record: [UInt8], decoder: FFV1Decoder)?

    /// What was covered so far, for the sidecar or the export's metadata.
    public var report: FaceCoverReport { cover.report }

    /// The layout frames stored as `format` are covered in, or why they cannot be. `captured`:
    /// the pixel format an FFV1 camera captured (the sidecar's `captured_pixel_format`).
    public static func layout(
        stored format: VideoFormat, captured: VideoFormat.PixelFormat?
    ) -> Result<FrameLayout, FaceCoverError> {
        switch format.pixelFormat {
        case .mjpeg:
            // Until a frame says otherwise: 4:2:2, as UVC cameras send.
            return .success(FrameLayout(jpegPlanes: .yuv422, width: format.width, height: format.height))
        case .ffv1:
            guard let captured, !VideoFormat.PixelFormat.storedOnly.contains(captured), captured != .mjpeg else {
                return .failure(FaceCoverError("FFV1 whose captured pixel format the sidecar does not name"))
            }
            return FrameLayout.of(VideoFormat(width: format.width, height: format.height, pixelFormat: captured))
        case .h264, .hevc, .fwht:
            return .failure(
                FaceCoverError(
                    "\(format.pixelFormat.rawValue) frames are coded against each other and are not covered "
                        + "(raw, MJPEG and FFV1 cameras are)"))
        default:
            return FrameLayout.of(format)
        }
    }

    /// A cover for one camera's frames, its detector loaded.
    ///
    /// - Parameters:
    ///   - format: the stream's format as stored (its sidecar's).
    ///   - captured: an FFV1 camera's captured pixel format (its frames decode with the record
    ///     `decode(with:)` gives).
    ///   - detector: nil for MTCNN with the installed model.
    ///   - quality: what an MJPEG camera's frames are written again at (a live preview's own).
    public init(
        stored format: VideoFormat, captured: VideoFormat.PixelFormat? = nil,
        settings: FaceCover.Settings, detector: (any FaceDetecting)? = nil, quality: Int = recodedJPEGQuality
    ) throws(FaceCoverError) {
        let layout = try Self.layout(stored: format, captured: captured).get()
        cover =
            if let detector {
                FaceCover(layout: layout, settings: settings, detector: detector)
            } else {
                try FaceCover.mtcnn(layout: layout, settings: settings)
            }
        self.settings = settings
        width = format.width
        height = format.height
        do {
            switch format.pixelFormat {
            case .mjpeg:
                jpeg = (
                    try JPEGDecoder(),
                    try YUVPlanesJPEGEncoder(width: width, height: height, quality: quality)
                )
                ffv1 = nil
                cover.recodesJPEG(quality: quality)
                self.codecPrivate = []
            case .ffv1:
                let frames = VideoFormat(width: width, height: height, pixelFormat: captured ?? format.pixelFormat)
                let encoder = try FFV1Encoder(format: frames)
                ffv1 = (frames, encoder)
                jpeg = nil
                self.codecPrivate = encoder.codecPrivate
            default:
                (jpeg, ffv1, self.codecPrivate) = (nil, nil, [])
            }
        } catch {
            throw FaceCoverError("\(format): \(error)")
        }
    }

    /// The configuration record the next FFV1 frames were coded with (each file of a segmented
    /// recording has its own): its decoder is made when it differs from the last one's.
    public func decode(with record: [UInt8]) throws(FaceCoverError) {
        guard let ffv1, record != ffv1Decoder?.record else { return }
        do throws(EncodeError) {
            ffv1Decoder = (record, try FFV1Decoder(format: ffv1.format, codecPrivate: record))
        } catch {
            throw FaceCoverError("\(error)", damagedFrame: true)
        }
    }

    /// Takes the next frame as stored and returns the frames whose cover is settled, oldest first
    /// (`FaceCover.push`), each stored again with the areas covered. A frame that does not
    /// decode, or a raw one short of its layout, throws an error that says so (`damagedFrame`).
    public func push(_ stored: [UInt8]) throws(FaceCoverError) -> [(bytes: [UInt8], covered: [FaceBox])] {
        let picture: [UInt8]
        do {
            if let jpeg {
                let decoded = try stored.withUnsafeBytes { try jpeg.decoder.decodePlanes($0, size: (width, height)) }
                picture = decoded.bytes
                try follow(decoded.subsampling)
            } else if ffv1 != nil {
                guard let decoder = ffv1Decoder?.decoder else {
                    throw FaceCoverError("an FFV1 frame came before the record it was coded with")
                }
                picture = try stored.withUnsafeBytes { try decoder.decode($0) }
            } else {
                guard stored.count >= cover.layout.byteCount else {
                    throw EncodeError(
                        .encoder,
                        "a \(cover.layout) frame holds \(cover.layout.byteCount) bytes, this one \(stored.count)")
                }
                picture = stored
            }
        } catch let error as FaceCoverError {
            throw error
        } catch {
            throw FaceCoverError("\(error)", damagedFrame: true)
        }
        return try storedAgain(try cover.push(picture))
    }

    /// An MJPEG camera's frames are covered in the planes its first frame holds; a later frame
    /// sampled otherwise is refused (no camera changes it while it streams).
    private func follow(_ frame: JPEGSubsampling) throws(FaceCoverError) {
        if let subsampling {
            guard frame == subsampling else {
                throw FaceCoverError("an MJPEG frame sampled \(frame) among frames sampled \(subsampling)")
            }
            return
        }
        subsampling = frame
        let layout = FrameLayout(jpegPlanes: frame, width: width, height: height)
        guard layout != cover.layout else { return }
        let quality = cover.report.recodedJPEGQuality
        cover = FaceCover(layout: layout, settings: settings, detector: cover.detector)
        if let quality { cover.recodesJPEG(quality: quality) }
    }

    /// The frames still held back, settled and stored again: the end of the camera's frames.
    public func flush() throws(FaceCoverError) -> [(bytes: [UInt8], covered: [FaceBox])] {
        try storedAgain(cover.flush())
    }

    private func storedAgain(
        _ settled: [(bytes: [UInt8], covered: [FaceBox])]
    ) throws(FaceCoverError) -> [(bytes: [UInt8], covered: [FaceBox])] {
        guard jpeg != nil || ffv1 != nil else { return settled }
        var again: [(bytes: [UInt8], covered: [FaceBox])] = []
        again.reserveCapacity(settled.count)
        do {
            for frame in settled {
                if let jpeg, let subsampling {
                    var planes = frame.bytes
                    Self.fillLumaPadding(&planes, layout: cover.layout)
                    again.append((try jpeg.encoder.encode(planes, subsampling: subsampling), frame.covered))
                } else if let ffv1 {
                    var coded: [UInt8] = []
                    // Intra-only: each frame's packet comes out of its own encode.
                    try frame.bytes.withUnsafeBytes { picture in
                        try ffv1.encoder.encode(picture, record: CaptureRecord()) { coded = Array($0.bytes) }
                    }
                    guard !coded.isEmpty else { throw EncodeError(.encoder, "FFV1 gave no packet for a frame") }
                    again.append((coded, frame.covered))
                }
            }
        } catch {
            throw FaceCoverError("writing a covered frame again: \(error)")
        }
        return again
    }

    /// The luma plane's columns and rows past the picture (out to whole chroma samples) made
    /// copies of its last ones, as covered: the cover stops at the picture's edge, and the
    /// padding libjpeg-turbo decoded holds the recorded edge, which the JPEG would carry again.
    static func fillLumaPadding(_ planes: inout [UInt8], layout: FrameLayout) {
        guard layout.kind == .yuvPlanes, let luma = layout.components.first else { return }
        let rowBytes = luma.rowBytes, rows = layout.components[1].offset / rowBytes
        guard rowBytes > layout.width || rows > layout.height else { return }
        planes.withUnsafeMutableBufferPointer { bytes in
            for row in 0..<layout.height {
                let last = bytes[row * rowBytes + layout.width - 1]
                for column in layout.width..<rowBytes { bytes[row * rowBytes + column] = last }
            }
            for row in layout.height..<rows {
                for column in 0..<rowBytes {
                    bytes[row * rowBytes + column] = bytes[(layout.height - 1) * rowBytes + column]
                }
            }
        }
    }
}
