import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// A camera without hardware: a moving test pattern at a nominal rate, in buffers the source
/// owns and the writer hands back, stamped at "dequeue" like a real camera's frames. It makes
/// each raw format fieldcap records: YUYV (the default), GREY, NV12, Y16 (whose low byte
/// varies on its own, so a path that keeps only 8 bits shows), Z16 (depth in millimetres), the
/// four 8-bit Bayer mosaics (the colour bars in RGB, each pixel the colour its filter passes),
/// and MJPEG like a UVC camera's: the YUYV pattern through a JPEG encoder the caller gives
/// (FieldcapCore links no codec), every frame of the pattern's cycle encoded before capture starts,
/// so the capture thread copies as it does for raw frames, and each frame's size differs.
///
/// Like a V4L2 camera it has a fixed set of buffers: a frame is drawn into a free one, its index
/// goes through the ring, and the writer returns the buffer after writing it (`releaseBuffer`,
/// through an SPSC ring back to the capture thread). When the writer holds every buffer the frame
/// is dropped and counted, never waited for.
///
/// Thread-bound (capture) while running; `frameBytes` and `releaseBuffer` are writer-bound.
public final class SyntheticCamera: CaptureSource, @unchecked Sendable {
    public let descriptor: StreamDescriptor
    public let format: VideoFormat
    private let periodNs: UInt64
    private let frameSize: Int
    private let buffers: [UnsafeMutableRawPointer]
    /// Buffers the writer has handed back (writer → capture).
    private let returned: SPSCRing<Int32>
    /// Each plane of the frame (one, or NV12's two), drawn twice as wide, so a moving window of
    /// it is a memcpy per row.
    private let planes: [Plane]
    /// MJPEG: the JPEG of each frame of the pattern's cycle, one after the other, and where each
    /// starts (the last entry is the end).
    private let jpegFrames: [UInt8]
    private let jpegOffsets: [Int]
    /// A textured wall seen by a camera turning with a hand's motion, instead of the pattern.
    private let turning: Turning?
    /// The wall a turning camera renders, made (texture and all) before capture starts.
    private let scene: TexturedScene?
    /// A photograph moving across the pattern, in the camera's own format.
    private let overlay: Overlay?

    /// The wall a turning camera sees: each frame is the view at its stamp (CLOCK_MONOTONIC_RAW,
    /// in seconds) less `delay`, so its stamps are late by `delay` against a synthetic IMU with the
    /// same motion: the known truth `fieldcap check-sync` is tested against.
    public struct Turning: Sendable {
        public var motion: HandMotion
        /// Seconds; negative for stamps that are early.
        public var delay: Double
        /// Degrees across; nil for the 60° the offset check assumes without intrinsics.
        public var fieldOfView: Double?

        public init(motion: HandMotion, delay: Double, fieldOfView: Double? = nil) {
            self.motion = motion
            self.delay = delay
            self.fieldOfView = fieldOfView
        }
    }

    /// The formats a turning camera makes: grey and YUYV (its chroma flat).
    public static let turningFormats: [VideoFormat.PixelFormat] = [.grey, .yuyv]

    /// A photograph (RGB, rows packed) that moves to and fro across the pattern, four pixels a
    /// frame, as a person walks past a camera: what `--blur-faces` is tested and shown with.
    public struct Picture: Sendable {
        public var name: String
        public var width: Int
        public var height: Int
        public var rgb: [UInt8]

        public init(name: String, width: Int, height: Int, rgb: [UInt8]) {
            precondition(width > 0 && height > 0 && rgb.count == width * height * 3)
            self.name = name
            self.width = width
            self.height = height
            self.rgb = rgb
        }
    }

    /// The formats a picture is shown in.
    public static let pictureFormats: [VideoFormat.PixelFormat] = [
        .grey, .yuyv, .nv12, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB,
    ]

    /// A picture in the camera's format: its rows as the frame holds them (YUYV's pairs, NV12's
    /// luma rows then its chroma rows, a mosaic's filtered colours in `luma`), an even size.
    private struct Overlay {
        var name: String
        var width: Int
        var height: Int
        var luma: [UInt8]
        /// YUYV: the whole rows (luma and chroma interleaved); NV12: the chroma rows.
        var chroma: [UInt8]
    }

    /// One plane of the pattern: rows of `rowBytes` in the frame, `2 * rowBytes` in `pattern`.
    private struct Plane {
        var rows: Int
        var rowBytes: Int
        /// Where the plane starts in a frame.
        var offset: Int
        var pattern: UnsafeMutableRawPointer
    }

    /// The formats it makes.
    public static let formats: [VideoFormat.PixelFormat] = [
        .yuyv, .grey, .nv12, .y16, .z16, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB, .mjpeg,
    ]

    /// Turns a YUYV frame of the camera's size into a JPEG (for `.mjpeg`).
    public typealias JPEGCompressor = (_ yuyvFrame: UnsafeRawBufferPointer) throws -> [UInt8]

    /// - Parameters:
    ///   - id: the stream id.
    ///   - width, height: the frame size (even: YUYV packs two pixels in four bytes, NV12 halves both).
    ///   - rate: frames per second.
    ///   - bufferCount: buffers in flight, as a V4L2 camera's mmap buffers.
    ///   - pixelFormat: one of `formats` but MJPEG (`mjpeg(...)` makes those).
    ///   - turning: a textured wall seen turning instead of the pattern (`turningFormats` only).
    ///   - picture: a photograph moving across the pattern (`pictureFormats` only; no larger
    ///     than the frame).
    public convenience init(
        id: String = "cam", width: Int = 640, height: Int = 480, rate: Double = 30, bufferCount: Int = 8,
        pixelFormat: VideoFormat.PixelFormat = .yuyv, turning: Turning? = nil, picture: Picture? = nil
    ) {
        precondition(pixelFormat != .mjpeg, "SyntheticCamera.mjpeg makes MJPEG cameras")
        precondition(turning == nil || Self.turningFormats.contains(pixelFormat))
        precondition(picture == nil || (Self.pictureFormats.contains(pixelFormat) && turning == nil))
        precondition(picture.map { $0.width <= width && $0.height <= height } ?? true)
        self.init(
            id: id, width: width, height: height, rate: rate, bufferCount: bufferCount, pixelFormat: pixelFormat,
            jpegs: nil, turning: turning, picture: picture)
    }

    /// An MJPEG camera: the YUYV pattern's cycle (a frame moves 4 pixels, so `width / 4` frames
    /// when the width is a multiple of 4) through `compressor`, before capture starts.
    public static func mjpeg(
        id: String = "cam", width: Int = 640, height: Int = 480, rate: Double = 30, bufferCount: Int = 8,
        compressor: JPEGCompressor
    ) throws -> SyntheticCamera {
        let yuyv = SyntheticCamera(id: id, width: width, height: height, rate: rate, bufferCount: 1)
        let cycle = yuyv.cycleLength
        var frames: [UInt8] = [], offsets = [0]
        for sequence in 0..<UInt64(cycle) {
            let size = yuyv.draw(sequence, into: yuyv.buffers[0])
            frames += try compressor(UnsafeRawBufferPointer(start: yuyv.buffers[0], count: size))
            offsets.append(frames.count)
        }
        return SyntheticCamera(
            id: id, width: width, height: height, rate: rate, bufferCount: bufferCount, pixelFormat: .mjpeg,
            jpegs: (frames, offsets))
    }

    private init(
        id: String, width: Int, height: Int, rate: Double, bufferCount: Int, pixelFormat: VideoFormat.PixelFormat,
        jpegs: (frames: [UInt8], offsets: [Int])?, turning: Turning? = nil, picture: Picture? = nil
    ) {
        self.turning = turning
        overlay = picture.map { Self.overlay($0, pixelFormat: pixelFormat) }
        scene = turning.map { turning in
            TexturedScene(
                width: width, height: height,
                focalLength: turning.fieldOfView.map { Double(width) / (2 * tan($0 * .pi / 360)) })
        }
        precondition(width > 0 && width % 2 == 0 && height > 0 && height % 2 == 0 && rate > 0 && bufferCount > 0)
        precondition(Self.formats.contains(pixelFormat))
        format = VideoFormat(width: width, height: height, pixelFormat: pixelFormat)
        descriptor = StreamDescriptor(
            id: id, kind: .video, nominalRate: rate, device: "synthetic:\(width)x\(height)@\(rate.formatted)",
            videoFormat: format,
            frameBuffers: bufferCount)
        periodNs = UInt64(1e9 / rate)
        jpegFrames = jpegs?.frames ?? []
        jpegOffsets = jpegs?.offsets ?? []
        frameSize =
            pixelFormat.frameBytes(width: width, height: height)
            ?? zip(jpegOffsets.dropFirst(), jpegOffsets).map { $0 - $1 }.max()!
        // Page-aligned, like mmap'd buffers: the video writer can then use direct I/O.
        let page = max(4096, sysconf(Int32(_SC_PAGESIZE)))
        buffers = (0..<bufferCount).map { [frameSize] _ in
            UnsafeMutableRawPointer.allocate(byteCount: frameSize, alignment: page)
        }
        returned = SPSCRing(minimumCapacity: bufferCount)
        let layout: [(rows: Int, rowBytes: Int)] =
            switch pixelFormat {
            case .nv12: [(height, width), (height / 2, width)]
            case .grey, .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB: [(height, width)]
            case .mjpeg: []
            default: [(height, width * 2)]
            }
        var offset = 0
        planes = layout.map { plane in
            defer { offset += plane.rows * plane.rowBytes }
            return Plane(
                rows: plane.rows, rowBytes: plane.rowBytes, offset: offset,
                pattern: .allocate(byteCount: plane.rows * plane.rowBytes * 2, alignment: 64))
        }
        if pixelFormat != .mjpeg { drawPattern() }
        for index in 0..<bufferCount { _ = returned.tryPush(Int32(index)) }
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
        for plane in planes { plane.pattern.deallocate() }
    }

    /// Vertical colour bars with a diagonal ramp in luma, repeated twice across, so any window
    /// `width` pixels wide is a valid frame.
    private func drawPattern() {
        let width = format.width, height = format.height
        let bars: [(y: UInt8, u: UInt8, v: UInt8)] = [
            (235, 128, 128), (210, 16, 146), (170, 166, 16), (145, 54, 34), (106, 202, 222), (81, 90, 240),
            (41, 240, 110), (16, 128, 128),
        ]
        /// The pattern at pixel `x` (of two periods) in `row`: luma of the pixel, chroma of its pair.
        func sample(_ x: Int, _ row: Int) -> (y: UInt8, u: UInt8, v: UInt8) {
            let bar = bars[(x - x % 2) % width * bars.count / width]
            let ramp = UInt8(truncatingIfNeeded: (x % width + row) & 0x3F)
            let luma = x % 2 == 0 ? bar.y &- min(bar.y - 16, ramp) : bar.y
            return (luma, bar.u, bar.v)
        }
        let first = planes[0].pattern.assumingMemoryBound(to: UInt8.self)
        for row in 0..<height {
            for x in 0..<(2 * width) {
                let pixel = sample(x, row)
                switch format.pixelFormat {
                case .yuyv:
                    let line = first + row * width * 4
                    line[x * 2] = pixel.y
                    line[x * 2 + 1] = x % 2 == 0 ? pixel.u : pixel.v
                case .y16:
                    // Little-endian: a low byte of its own (the ramp running the other way).
                    let line = first + row * width * 4
                    line[x * 2] = UInt8(truncatingIfNeeded: 255 &- (x % width + 3 &* row))
                    line[x * 2 + 1] = pixel.y
                case .z16:
                    // Millimetres: a slope from 0.5 m to 4.5 m across, a little farther row by
                    // row, with small holes of no depth (0) as a real depth camera has.
                    let line = first + row * width * 4
                    let column = x % width
                    let hole = column / 8 % 16 == 5 && row % 32 < 4
                    let millimetres = hole ? 0 : UInt16(500 + column * 4000 / width + row)
                    line[x * 2] = UInt8(truncatingIfNeeded: millimetres)
                    line[x * 2 + 1] = UInt8(truncatingIfNeeded: millimetres >> 8)
                case .grey, .nv12:
                    first[row * width * 2 + x] = pixel.y
                case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
                    let rgb = Self.rgb(pixel)
                    first[row * width * 2 + x] =
                        switch format.pixelFormat.bayerPattern!.colour(column: x, row: row) {
                        case .red: rgb.r
                        case .green: rgb.g
                        case .blue: rgb.b
                        }
                case .mjpeg: preconditionFailure("MJPEG is drawn as YUYV, then encoded")
                case .ffv1, .h264, .hevc, .fwht:
                    preconditionFailure("no camera captures \(format.pixelFormat.rawValue)")
                }
            }
        }
        if format.pixelFormat == .nv12 {
            let chroma = planes[1].pattern.assumingMemoryBound(to: UInt8.self)
            for row in 0..<(height / 2) {
                for pair in 0..<width {
                    let pixel = sample(pair * 2, row * 2)
                    chroma[row * width * 2 + pair * 2] = pixel.u
                    chroma[row * width * 2 + pair * 2 + 1] = pixel.v
                }
            }
        }
    }

    /// A pattern sample's colour (BT.601, video range), for the Bayer mosaics.
    private static func rgb(_ pixel: (y: UInt8, u: UInt8, v: UInt8)) -> (r: UInt8, g: UInt8, b: UInt8) {
        let (y, u, v) = (1.164 * (Double(pixel.y) - 16), Double(pixel.u) - 128, Double(pixel.v) - 128)
        func byte(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        return (byte(y + 1.596 * v), byte(y - 0.392 * u - 0.813 * v), byte(y + 2.017 * u))
    }

    /// Frames until the pattern repeats.
    private var cycleLength: Int { format.width % 4 == 0 ? format.width / 4 : format.width / 2 }

    /// Draws frame `sequence` into `buffer` and returns its size: the pattern shifted left by 4
    /// pixels a frame, or that frame's JPEG.
    private func draw(_ sequence: UInt64, into buffer: UnsafeMutableRawPointer) -> Int {
        if format.pixelFormat == .mjpeg {
            let index = Int(sequence % UInt64(cycleLength))
            let start = jpegOffsets[index], count = jpegOffsets[index + 1] - start
            jpegFrames.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + start, byteCount: count) }
            return count
        }
        let shiftPixels = Int(sequence * 4 % UInt64(format.width))
        for plane in planes {
            let shift = shiftPixels * plane.rowBytes / format.width
            for row in 0..<plane.rows {
                (buffer + plane.offset + row * plane.rowBytes).copyMemory(
                    from: plane.pattern + row * plane.rowBytes * 2 + shift, byteCount: plane.rowBytes)
            }
        }
        return frameSize
    }

    /// Draws the wall at `time` less the delay: grey, or YUYV with that grey as its luma.
    private func drawTurning(_ turning: Turning, at time: Double, into buffer: UnsafeMutableRawPointer) -> Int {
        let scene = scene!
        let pixels = format.width * format.height
        let rotation = turning.motion.rotation(at: time - turning.delay)
        if format.pixelFormat == .grey {
            scene.render(rotation: rotation, into: UnsafeMutableRawBufferPointer(start: buffer, count: pixels))
            return frameSize
        }
        // The grey view at the top of the buffer, spread from the back into YUYV's pairs.
        let bytes = buffer.assumingMemoryBound(to: UInt8.self)
        scene.render(rotation: rotation, into: UnsafeMutableRawBufferPointer(start: buffer, count: pixels))
        for pixel in (0..<pixels).reversed() {
            bytes[2 * pixel] = bytes[pixel]
            bytes[2 * pixel + 1] = 128
        }
        return frameSize
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        var due = MonotonicClock.read(CLOCK_MONOTONIC)
        var sequence: UInt64 = 0
        var record = CaptureRecord()
        // A buffer whose frame did not fit in the ring stays here for the next frame: the return
        // ring has one producer, the writer, so the capture thread never pushes into it.
        var spare: Int32?
        while !stop.isRequested {
            due += periodNs
            var wake = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
            _ = SystemCall.retryingInterruptedCode { clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) }
            let dequeued = MonotonicClock.now()
            defer { sequence += 1 }
            guard let index = spare ?? returned.pop() else {
                // Every buffer is with the writer: this frame is lost, and counted.
                ring.drops.record(sequence)
                continue
            }
            spare = nil
            let size =
                if let turning {
                    drawTurning(turning, at: Double(dequeued) / 1e9, into: buffers[Int(index)])
                } else {
                    draw(sequence, into: buffers[Int(index)])
                }
            if let overlay { paste(overlay, sequence: sequence, into: buffers[Int(index)]) }
            record.sequence = sequence
            record.dequeueNs = dequeued
            record.captureNs = dequeued
            record.uncertaintyNs = 1_000_000
            record.bufferIndex = index
            record.bytesUsed = UInt32(size)
            if !ring.push(record, sequence: sequence) { spare = index }
        }
    }

    public func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? {
        guard record.bufferIndex >= 0 else { return nil }
        return UnsafeRawBufferPointer(start: buffers[Int(record.bufferIndex)], count: Int(record.bytesUsed))
    }

    public func releaseBuffer(_ index: Int32) {
        _ = returned.tryPush(index)
    }
}

extension SyntheticCamera {
    /// The picture in the camera's format, cut to an even size. BT.601 full range (JPEG's).
    private static func overlay(_ picture: Picture, pixelFormat: VideoFormat.PixelFormat) -> Overlay {
        let width = picture.width / 2 * 2, height = picture.height / 2 * 2
        func yuv(_ x: Int, _ y: Int) -> (Double, Double, Double) {
            let at = (y * picture.width + x) * 3
            let r = Double(picture.rgb[at]), g = Double(picture.rgb[at + 1]), b = Double(picture.rgb[at + 2])
            let luma = 0.299 * r + 0.587 * g + 0.114 * b
            return (luma, (b - luma) / 1.772 + 128, (r - luma) / 1.402 + 128)
        }
        func byte(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        var luma = [UInt8](repeating: 0, count: width * height)
        if let pattern = pixelFormat.bayerPattern {
            // Each pixel the colour its filter passes; the picture lands on even columns and rows,
            // so its filter is the frame's.
            for y in 0..<height {
                for x in 0..<width {
                    let at = (y * picture.width + x) * 3
                    luma[y * width + x] =
                        switch pattern.colour(column: x, row: y) {
                        case .red: picture.rgb[at]
                        case .green: picture.rgb[at + 1]
                        case .blue: picture.rgb[at + 2]
                        }
                }
            }
            return Overlay(name: picture.name, width: width, height: height, luma: luma, chroma: [])
        }
        for y in 0..<height { for x in 0..<width { luma[y * width + x] = byte(yuv(x, y).0) } }
        var chroma: [UInt8] = []
        if pixelFormat == .yuyv {
            for y in 0..<height {
                for x in stride(from: 0, to: width, by: 2) {
                    let (y0, u0, v0) = yuv(x, y), (y1, u1, v1) = yuv(x + 1, y)
                    chroma += [byte(y0), byte((u0 + u1) / 2), byte(y1), byte((v0 + v1) / 2)]
                }
            }
        } else if pixelFormat == .nv12 {
            for y in stride(from: 0, to: height, by: 2) {
                for x in stride(from: 0, to: width, by: 2) {
                    let samples = [yuv(x, y), yuv(x + 1, y), yuv(x, y + 1), yuv(x + 1, y + 1)]
                    chroma += [byte(samples.map(\.1).reduce(0, +) / 4), byte(samples.map(\.2).reduce(0, +) / 4)]
                }
            }
        }
        return Overlay(name: picture.name, width: width, height: height, luma: luma, chroma: chroma)
    }

    /// Where the picture is in frame `sequence`: to and fro along the middle, 4 pixels a frame.
    func pictureOrigin(sequence: UInt64) -> (x: Int, y: Int)? {
        guard let overlay else { return nil }
        let travel = format.width - overlay.width
        let step = travel > 0 ? Int(sequence * 4 % UInt64(2 * travel)) : 0
        let x = step <= travel ? step : 2 * travel - step
        return (x / 2 * 2, (format.height - overlay.height) / 4 * 2)
    }

    private func paste(_ overlay: Overlay, sequence: UInt64, into buffer: UnsafeMutableRawPointer) {
        guard let (left, top) = pictureOrigin(sequence: sequence) else { return }
        let width = format.width
        switch format.pixelFormat {
        case .yuyv:
            overlay.chroma.withUnsafeBytes { rows in
                for y in 0..<overlay.height {
                    (buffer + (top + y) * width * 2 + left * 2).copyMemory(
                        from: rows.baseAddress! + y * overlay.width * 2, byteCount: overlay.width * 2)
                }
            }
        default:
            overlay.luma.withUnsafeBytes { rows in
                for y in 0..<overlay.height {
                    (buffer + (top + y) * width + left).copyMemory(
                        from: rows.baseAddress! + y * overlay.width, byteCount: overlay.width)
                }
            }
            if format.pixelFormat == .nv12 {
                let plane = buffer + width * format.height
                overlay.chroma.withUnsafeBytes { rows in
                    for y in 0..<(overlay.height / 2) {
                        (plane + (top / 2 + y) * width + left).copyMemory(
                            from: rows.baseAddress! + y * overlay.width, byteCount: overlay.width)
                    }
                }
            }
        }
    }

    private var source: String {
        if let overlay { return "moving test pattern with the picture \(overlay.name) passing" }
        guard let turning else { return "moving test pattern" }
        return "a textured wall turned by hand, stamps late by \((turning.delay * 1000).formatted) ms"
            + (turning.fieldOfView.map { ", \($0.formatted)° across" } ?? "")
    }

    public var report: SourceReport {
        SourceReport(
            kind: "synthetic",
            granted: [
                "device": "synthetic", "source": .string(source),
                "format": .string(format.pixelFormat.rawValue),
                "width": JSONValue(format.width), "height": JSONValue(format.height),
                "rate": .double(descriptor.nominalRate),
                "buffers": JSONValue(buffers.count),
            ],
            summary: "\(source), \(format.pixelFormat.rawValue) \(format.width)x\(format.height), "
                + "\(SourceReport.rate(descriptor.nominalRate)) fps, \(buffers.count) buffers, stamped at dequeue",
            timeSource: "dequeue", timestamps: SourceReport.dequeueTimestamps)
    }
}
