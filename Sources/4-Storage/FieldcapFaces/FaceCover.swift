import FieldcapEncode

/// Covers the faces of one camera's frames, in their order: the detector looks at every
/// `detectEvery`th frame, the tracker carries its faces over the frames between and the ones it
/// misses, and each box, grown by `margin` on every side, is pixelated in the frame itself.
/// What it did is counted for the export's metadata or the sidecar (`FaceCoverReport`).
///
/// Thread-bound: one per camera and thread (the detector and the tracker are).
public final class FaceCover {
    public struct Settings: Equatable, Sendable {
        /// Look for faces in every `detectEvery`th frame (1: each).
        public var detectEvery = 1
        /// The fraction of a face's size added on every side before it is covered: a box fits
        /// the face from brow to chin, and hair, ears and the outline identify people too.
        public var margin = 0.25
        /// Blocks along the longer side of a covered box.
        public var blocksAcross = 6
        /// Frames a face stays covered after the detector last saw it (half a second at 30 fps;
        /// the exports give each camera half a second of its own rate).
        public var hold = 15
        /// The smallest face searched for, in pixels.
        public var minFace = 36
        /// Frames a face is covered before the detector first finds it (`push`: an offline
        /// cover holds this many frames back): a face coming into view between the frames
        /// looked at, or missed at first, is covered too. 0 for a live preview.
        public var lookAhead = 0

        public init() {}

        /// These settings with `hold` half a second of a camera's `rate` (unchanged for an
        /// unknown rate): a face the detector misses stays covered that long.
        public func holding(rate: Double) -> Settings {
            var settings = self
            if rate > 0 && rate < 1e6 { settings.hold = max(1, Int((rate / 2).rounded())) }
            return settings
        }

        /// `holding(rate:)`, and looking as far ahead as it holds (at least to the next frame
        /// looked at, at most 2 s of the camera; `FaceCover` caps it by bytes too): for an offline
        /// cover, which can wait for the frames after the one it writes.
        public func offline(rate: Double) -> Settings {
            var settings = holding(rate: rate)
            let twoSeconds = rate > 0 && rate < 1e6 ? Int(2 * rate) : 60
            settings.lookAhead = min(max(settings.hold, settings.detectEvery), max(1, twoSeconds))
            return settings
        }
    }

    public let layout: FrameLayout
    public let settings: Settings
    public let detector: any FaceDetecting
    public private(set) var report: FaceCoverReport
    private var tracker: FaceTracker
    private var frame = 0
    /// Frames pushed and not settled yet (at most `lookAhead`), with their numbers and the boxes
    /// found for them so far (not grown by the margin).
    private var pending: [(bytes: [UInt8], frame: Int, boxes: [FaceBox])] = []
    /// The most a cover holds back: a face is looked back for at most 2 s of a camera, and never
    /// with more than this many bytes of frames waiting.
    public static let lookAheadBytes = 256 << 20
    /// The detector's input when the frame is not grey or RGB already.
    private var scratch: [UInt8] = []
    /// A 16-bit frame's histogram, for its stretch.
    private var histogram: [Int32] = []

    public init(layout: FrameLayout, settings: Settings, detector: any FaceDetecting) {
        precondition(settings.detectEvery >= 1 && settings.margin >= 0 && settings.blocksAcross >= 1)
        var settings = settings
        // A face is held at least until the detector looks again.
        settings.hold = max(settings.hold, settings.detectEvery)
        settings.lookAhead = min(settings.lookAhead, max(0, Self.lookAheadBytes / max(1, layout.byteCount)))
        self.layout = layout
        self.settings = settings
        self.detector = detector
        tracker = FaceTracker(hold: settings.hold)
        report = FaceCoverReport(detector: detector.name, settings: settings)
    }

    /// MTCNN with the installed model: `settings.minFace`, one OpenCV thread.
    public static func mtcnn(layout: FrameLayout, settings: Settings) throws(FaceCoverError) -> FaceCover {
        FaceCover(layout: layout, settings: settings, detector: try MTCNNFaceDetector(minFace: settings.minFace))
    }

    /// Covers the faces of the next frame in place; returns the areas covered (each face's box
    /// grown by the margin, out to the pixelation's grid, cut at the frame's edges).
    @discardableResult
    public func cover(_ bytes: UnsafeMutableRawBufferPointer) throws(FaceCoverError) -> [FaceBox] {
        precondition(settings.lookAhead == 0, "a cover that looks ahead takes its frames through push")
        guard bytes.count >= layout.byteCount else {
            throw FaceCoverError("a \(layout) frame holds \(layout.byteCount) bytes, this one \(bytes.count)")
        }
        if frame % settings.detectEvery == 0 {
            let faces = try detect(UnsafeRawBufferPointer(bytes))
            _ = tracker.detected(faces, inFrame: frame)
            report.detections += 1
            report.facesDetected += faces.count
        }
        let boxes = tracker.boxes(inFrame: frame).map { $0.grown(by: settings.margin) }
        let covered = Pixelation.cover(boxes, in: bytes, layout: layout, blocksAcross: settings.blocksAcross)
        report.count(boxes: covered.count)
        frame += 1
        return covered
    }

    /// Takes the next frame and returns the frames whose cover is settled, oldest first, each
    /// with its faces covered and the areas covered: with `lookAhead` 0 this one at once, else
    /// the one `lookAhead` frames before it, covered also where a face first found since then
    /// was: carried back in place, grown as the tracker grows a box it carries forward, and once
    /// the detector has seen it twice, also along the speed it showed (a face walking into view).
    /// `flush` gives the rest.
    public func push(_ bytes: [UInt8]) throws(FaceCoverError) -> [(bytes: [UInt8], covered: [FaceBox])] {
        guard bytes.count >= layout.byteCount else {
            throw FaceCoverError("a \(layout) frame holds \(layout.byteCount) bytes, this one \(bytes.count)")
        }
        if frame % settings.detectEvery == 0 {
            let found = bytes.withUnsafeBytes { raw in Result { () throws(FaceCoverError) in try detect(raw) } }
            let faces = try found.get()
            let sightings = tracker.detected(faces, inFrame: frame)
            report.detections += 1
            report.facesDetected += faces.count
            for index in pending.indices {
                let at = pending[index].frame
                for face in sightings.fresh {
                    pending[index].boxes.append(FaceTracker.carried(face, frames: frame - at))
                }
                // Before its first sighting, where its speed puts it (the box in place is there too).
                for track in sightings.second where at < track.frame {
                    var box = track.box
                    box.x += track.velocityX * Double(at - track.frame)
                    box.y += track.velocityY * Double(at - track.frame)
                    pending[index].boxes.append(FaceTracker.carried(box, frames: track.frame - at))
                }
            }
        }
        pending.append((bytes, frame, tracker.boxes(inFrame: frame)))
        frame += 1
        var settled: [(bytes: [UInt8], covered: [FaceBox])] = []
        while pending.count > settings.lookAhead { settled.append(settle(pending.removeFirst())) }
        return settled
    }

    /// The frames still held back, settled: the end of the camera's frames.
    public func flush() -> [(bytes: [UInt8], covered: [FaceBox])] {
        defer { pending.removeAll() }
        return pending.map { settle($0) }
    }

    private func settle(_ frame: (bytes: [UInt8], frame: Int, boxes: [FaceBox])) -> (bytes: [UInt8], covered: [FaceBox])
    {
        var bytes = frame.bytes
        let boxes = frame.boxes.map { $0.grown(by: settings.margin) }
        let covered = bytes.withUnsafeMutableBytes { raw in
            Pixelation.cover(boxes, in: raw, layout: layout, blocksAcross: settings.blocksAcross)
        }
        report.count(boxes: covered.count)
        return (bytes, covered)
    }

    /// Notes in the report that the covered frames are written again as JPEG at `quality`.
    public func recodesJPEG(quality: Int) { report.recodedJPEGQuality = quality }

    /// `cover` on an array's bytes.
    @discardableResult
    public func cover(_ bytes: inout [UInt8]) throws(FaceCoverError) -> [FaceBox] {
        let covered = bytes.withUnsafeMutableBytes { raw in Result { () throws(FaceCoverError) in try cover(raw) } }
        return try covered.get()
    }

    private func detect(_ bytes: UnsafeRawBufferPointer) throws(FaceCoverError) -> [FaceBox] {
        let width = layout.width, height = layout.height
        switch layout.kind {
        case .grey8:
            return try detector.detect(
                DetectionImage(pixels: bytes, width: width, height: height, stride: width, channels: 1))
        case .rgb8:
            return try detector.detect(
                DetectionImage(pixels: bytes, width: width, height: height, stride: 3 * width, channels: 3))
        case .grey16:
            // Stretched from its own 1st to 99th percentile: a 10- or 12-bit camera's samples sit
            // in the low bits, where the high byte alone would show the detector a black frame
            // while a viewer that scales 16-bit images shows every face.
            if scratch.count != width * height { scratch = [UInt8](repeating: 0, count: width * height) }
            Self.stretch(bytes, pixels: width * height, into: &scratch, histogram: &histogram)
            return try detectScratch(channels: 1)
        case .yuyv, .nv12:
            // Colour: the detector finds more faces in RGB than in the luma alone (93 of 95
            // against 89 of the labelled set).
            if scratch.count != 3 * width * height { scratch = [UInt8](repeating: 0, count: 3 * width * height) }
            scratch.withUnsafeMutableBytes { rgb in YUVToRGB.convert(bytes, layout: layout, into: rgb) }
            return try detectScratch(channels: 3)
        case .yuvPlanes:
            if scratch.count != 3 * width * height { scratch = [UInt8](repeating: 0, count: 3 * width * height) }
            scratch.withUnsafeMutableBytes { rgb in YUVToRGB.convertPlanes(bytes, layout: layout, into: rgb) }
            return try detectScratch(channels: 3)
        case .bayer8:
            // Demosaiced as the exports show it (bilinear), in colour as YUV's.
            guard let pattern = layout.bayer,
                let demosaic = BayerDemosaic(pattern: pattern, width: width, height: height)
            else { throw FaceCoverError("\(layout): not whole 2x2 blocks") }
            if scratch.count != 3 * width * height { scratch = [UInt8](repeating: 0, count: 3 * width * height) }
            scratch.withUnsafeMutableBufferPointer { rgb in
                demosaic.rgb(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), into: rgb.baseAddress!)
            }
            return try detectScratch(channels: 3)
        }
    }

    /// 16-bit samples to 8 bits, their 1st percentile to 0 and 99th to 255.
    static func stretch(
        _ bytes: UnsafeRawBufferPointer, pixels: Int, into grey: inout [UInt8], histogram: inout [Int32]
    ) {
        if histogram.count != 65536 { histogram = [Int32](repeating: 0, count: 65536) }
        for value in 0..<65536 { histogram[value] = 0 }
        for index in 0..<pixels { histogram[Int(bytes[2 * index]) | Int(bytes[2 * index + 1]) << 8] += 1 }
        var low = 0, high = 65535, seen = 0
        for value in 0..<65536 {
            seen += Int(histogram[value])
            if seen > pixels / 100 {
                low = value
                break
            }
        }
        seen = 0
        for value in (0..<65536).reversed() {
            seen += Int(histogram[value])
            if seen > pixels / 100 {
                high = value
                break
            }
        }
        let span = max(1, high - low)
        for index in 0..<pixels {
            let value = Int(bytes[2 * index]) | Int(bytes[2 * index + 1]) << 8
            grey[index] = UInt8(max(0, min(255, (value - low) * 255 / span)))
        }
    }

    private func detectScratch(channels: Int) throws(FaceCoverError) -> [FaceBox] {
        let result = scratch.withUnsafeBytes { pixels in
            Result { () throws(FaceCoverError) in
                try detector.detect(
                    DetectionImage(
                        pixels: pixels, width: layout.width, height: layout.height, stride: channels * layout.width,
                        channels: channels))
            }
        }
        return try result.get()
    }
}

/// What a `FaceCover` did, for a reviewer: the detector and its settings, the frames, how many
/// the detector looked at, the faces it found, and the boxes covered (frames with any, the
/// most in one frame, all of them).
public struct FaceCoverReport: Equatable, Sendable {
    public let detector: String
    public let settings: FaceCover.Settings
    public var frames = 0
    public var detections = 0
    public var facesDetected = 0
    public var framesCovered = 0
    public var boxesCovered = 0
    public var mostBoxesInAFrame = 0
    /// The JPEG quality a coded camera's frames were written again at once covered (an MJPEG
    /// camera's, decoded to be covered); nil for frames covered as they are.
    public var recodedJPEGQuality: Int?

    mutating func count(boxes: Int) {
        frames += 1
        boxesCovered += boxes
        if boxes > 0 { framesCovered += 1 }
        mostBoxesInAFrame = max(mostBoxesInAFrame, boxes)
    }

    /// The report as a JSON object, keys in a fixed order.
    public var json: String {
        """
        {"detector":"\(detector)","detect_every":\(settings.detectEvery),"min_face_px":\(settings.minFace),\
        "margin":\(settings.margin),"blocks_across":\(settings.blocksAcross),"hold_frames":\(settings.hold),\
        "look_ahead_frames":\(settings.lookAhead),\
        "cover":"pixelation","frames":\(frames),"frames_detected":\(detections),"faces_detected":\(facesDetected),\
        "frames_covered":\(framesCovered),"boxes_covered":\(boxesCovered),"most_boxes_in_a_frame":\(mostBoxesInAFrame)\
        \(recodedJPEGQuality.map { ",\"recoded_jpeg_quality\":\($0)" } ?? "")}
        """
    }
}

/// YUYV and NV12 to RGB for the detector: BT.601 full range (as JPEG's), each chroma sample for
/// the pixels it was sampled from.
enum YUVToRGB {
    static func convert(_ frame: UnsafeRawBufferPointer, layout: FrameLayout, into rgb: UnsafeMutableRawBufferPointer) {
        let width = layout.width, height = layout.height
        for y in 0..<height {
            for x in 0..<width {
                let luma: Int, u: Int, v: Int
                if layout.kind == .yuyv {
                    let pair = y * 2 * width + (x / 2) * 4
                    luma = Int(frame[y * 2 * width + 2 * x])
                    u = Int(frame[pair + 1]) - 128
                    v = Int(frame[pair + 3]) - 128
                } else {
                    let chroma = width * height + (y / 2) * width + (x / 2) * 2
                    luma = Int(frame[y * width + x])
                    u = Int(frame[chroma]) - 128
                    v = Int(frame[chroma + 1]) - 128
                }
                store(luma: luma, u: u, v: v, at: 3 * (y * width + x), into: rgb)
            }
        }
    }

    /// A JPEG's planes (`FrameLayout(jpegPlanes:width:height:)`), each chroma sample for the pixels it
    /// stands for.
    static func convertPlanes(
        _ frame: UnsafeRawBufferPointer, layout: FrameLayout, into rgb: UnsafeMutableRawBufferPointer
    ) {
        let (luma, blue, red) = (layout.components[0], layout.components[1], layout.components[2])
        for y in 0..<layout.height {
            for x in 0..<layout.width {
                let chroma = (y / blue.down) * blue.rowBytes + x / blue.across
                store(
                    luma: Int(frame[y * luma.rowBytes + x]), u: Int(frame[blue.offset + chroma]) - 128,
                    v: Int(frame[red.offset + chroma]) - 128, at: 3 * (y * layout.width + x), into: rgb)
            }
        }
    }

    /// One pixel's RGB, fixed point with 16 fractional bits: 1.402, 0.344136, 0.714136, 1.772.
    @inline(__always)
    private static func store(luma: Int, u: Int, v: Int, at: Int, into rgb: UnsafeMutableRawBufferPointer) {
        rgb[at] = clamp(luma + (91881 * v + 32768) >> 16)
        rgb[at + 1] = clamp(luma - (22554 * u + 46802 * v + 32768) >> 16)
        rgb[at + 2] = clamp(luma + (116130 * u + 32768) >> 16)
    }

    private static func clamp(_ value: Int) -> UInt8 { UInt8(max(0, min(255, value))) }
}

extension FaceCoverReport {
    /// One line for a command's outcome.
    public var summary: String {
        "faces covered in \(framesCovered) of \(frames) frames (\(boxesCovered) boxes, at most \(mostBoxesInAFrame) "
            + "in one; the detector looked at \(detections) frames and found \(facesDetected) faces)"
    }
}
