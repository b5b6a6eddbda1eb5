import FieldcapCore
import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// A hardware encoder behind the V4L2 stateful encoder interface
/// (Documentation/userspace-api/media/v4l/dev-encoder.rst): H.264 or HEVC on a Raspberry Pi,
/// Rockchip, i.MX or other SoC, vicodec's FWHT in the kernel tests, through the same code.
///
/// Set-up follows the interface's order: the coded format on CAPTURE first, then the raw one on
/// OUTPUT, the rate, the controls, then buffers and streaming on both queues. A raw frame reaches
/// the encoder in one of two ways (`BufferedFrameEncoder`): where the camera exports its buffers
/// (DMABUF) laid out as the encoder reads them, and the encoder imports them, the camera's buffer
/// itself is queued, no byte copied; otherwise the writer copies the frame once, straight into a
/// free OUTPUT buffer (mmap). Each is stamped with its sequence number (the driver copies the
/// stamp to the coded buffer, which is how a coded frame finds its record, whatever the
/// encoder's delay), and queued; whatever coded frames are ready are emitted at once, and each
/// OUTPUT buffer the encoder is done with goes back (`inputReturned`). At the end
/// `V4L2_ENC_CMD_STOP` drains the encoder until the buffer flagged LAST.
///
/// An encoder that fails mid-stream (a coded buffer flagged ERROR, the device gone, an ioctl
/// refused) throws: the recording stops with that error, naming the encoder, and what was written
/// before stays a valid session. A frame is never silently lost between the camera's accounting
/// and the file.
///
/// Thread-bound: the encoding worker's thread.
public final class V4L2Encoder: BufferedFrameEncoder {
    public let encodedFormat: VideoFormat
    public let name: String
    /// The encoder's own picture when it is larger than the camera's (its alignment): frames are
    /// padded into it. Nil when the sizes agree.
    public let paddedFrom: VideoFormat?
    public var inputLayout: String? { paddedFrom.map { "padded to \($0.width)x\($0.height)" } }
    /// The track's CodecPrivate: FWHT's at once, H.264's and HEVC's parameter sets once the
    /// first frame gave them (`isCodecPrivateReady`).
    public var codecPrivate: [UInt8] { framing.codecPrivate ?? [] }
    public var isCodecPrivateReady: Bool { framing.codecPrivate != nil }
    private let framing: CodedFraming

    private let device: V4L2CodecDevice
    private let captured: VideoFormat
    private let packing: PlanePacking
    /// The OUTPUT buffers' memory when frames are copied in; empty when they are imported.
    private let outputBuffers: [V4L2CodecDevice.Mapped]
    private let captureBuffers: [V4L2CodecDevice.Mapped]
    /// The camera's buffers and their DMABUF descriptors, when the encoder imports them.
    public let importedBuffers: SharedFrameBuffers?
    private let dmabufs: [Int32]
    public let inputSlots: Int
    /// OUTPUT buffers free for `encode(_:record:emit:)`, when no worker manages them.
    private var freeOutput: [Int]
    public lazy var inputReturned: (Int) -> Void = { [unowned self] in freeOutput.append($0) }
    /// OUTPUT buffers queued and not yet given back.
    private var queuedInputs = Set<Int>()
    /// Records of the frames inside the encoder, by the sequence number they were stamped with.
    private var inside: [Int: CaptureRecord] = [:]
    private var nextSequence = 0
    private var streaming = false

    /// How long the encoder may hold every OUTPUT buffer before it counts as hung.
    static let stallLimitMs: Int32 = 2000

    /// OUTPUT buffers asked for when frames are copied in: the frames an encoder may be behind by.
    static let copiedInputs = 8

    /// Opens `encoding.device` (or the first encoder that takes `captured` to the codec) and
    /// sets it up for `captured` frames at `nominalRate`, importing `cameraBuffers` where the
    /// camera exports them and the encoder takes them.
    public init(
        _ encoding: HardwareEncoding, captured: VideoFormat, nominalRate: Double,
        cameraBuffers: SharedFrameBuffers? = nil
    ) throws {
        let path: String
        if let named = encoding.device {
            path = named
        } else {
            guard let found = V4L2Encoders.find(encoding.codec, from: captured.pixelFormat) else {
                throw EncodeError(.unavailable, V4L2Encoders.noneFound(encoding.codec, from: captured.pixelFormat))
            }
            path = found.path
        }
        device = try V4L2CodecDevice(path: path)
        self.captured = captured
        name = "V4L2 \(device.identity.driver) (\(path))"
        try Self.check(device, encoding.codec, from: captured.pixelFormat)

        // CAPTURE first: an encoder lists the raw formats it takes for the coded format chosen.
        let coded = try device.setFormat(
            .capture, fourcc: encoding.codec.fourcc, width: captured.width, height: captured.height,
            sizeImage: max(captured.pixelFormat.frameBytes(width: captured.width, height: captured.height) ?? 0, 65536))
        let raw = try device.setFormat(
            .output, fourcc: captured.pixelFormat.rawValue, width: captured.width, height: captured.height)
        // An encoder may align the picture to its blocks (a 1080p H.264 encoder's 1088 lines,
        // vicodec's 640x360 at the least): the frame is then padded into the larger picture and
        // the encoder told to show only the camera's part (dev-encoder.rst, "Encoding
        // parameters": the OUTPUT crop).
        guard raw.fourcc == captured.pixelFormat.rawValue, raw.width >= captured.width,
            raw.height >= captured.height
        else {
            throw EncodeError(
                .unsupportedFormat,
                "\(path): the encoder would take \(raw.width)x\(raw.height) \(raw.fourcc) "
                    + "for the camera's \(captured); pick a size it takes (`fieldcap list`)"
            )
        }
        guard
            let packing = PlanePacking(
                captured, bytesPerLine: raw.bytesPerLine, sizeImage: raw.sizeImage, codedWidth: raw.width,
                codedHeight: raw.height)
        else {
            throw EncodeError(
                .unsupportedFormat,
                "\(path): the encoder lays \(captured) out in \(raw.sizeImage) "
                    + "bytes, \(raw.bytesPerLine) a line: fieldcap cannot pack frames so"
            )
        }
        self.packing = packing
        // What the coded stream shows: the camera's size where the encoder crops to it, else its
        // whole (padded) picture.
        let padded = raw.width != captured.width || raw.height != captured.height
        let visible: (width: Int, height: Int) =
            padded
            ? device.setVisibleSize(width: captured.width, height: captured.height) ?? (raw.width, raw.height)
            : (captured.width, captured.height)
        encodedFormat = VideoFormat(
            width: visible.width, height: visible.height, pixelFormat: encoding.codec.storedFormat)
        paddedFrom = padded ? VideoFormat(width: raw.width, height: raw.height, pixelFormat: captured.pixelFormat) : nil
        device.setFrameRate(nominalRate)
        Self.configure(device, encoding, nominalRate: nominalRate)
        device.subscribeToEvents()
        if let cameraBuffers, let descriptors = Self.importable(cameraBuffers, packing: packing, into: device) {
            importedBuffers = cameraBuffers
            cameraBuffers.markReadInPlace()
            dmabufs = descriptors
            outputBuffers = []
            // The camera keeps half its buffers to capture into, whatever the encoder holds.
            inputSlots = max(1, cameraBuffers.count / 2)
            freeOutput = []
        } else {
            importedBuffers = nil
            dmabufs = []
            outputBuffers = try device.mapBuffers(.output, count: Self.copiedInputs)
            inputSlots = outputBuffers.count
            freeOutput = Array(outputBuffers.indices.reversed())
        }
        captureBuffers = try device.mapBuffers(.capture, count: 4)
        framing =
            switch encoding.codec {
            case .fwht: FWHTFraming(codecPrivate: Self.bitmapInfoHeader(encoding.codec, encodedFormat))
            case .h264: AVCFraming(.h264, capacity: coded.sizeImage)
            case .hevc: AVCFraming(.hevc, capacity: coded.sizeImage)
            }
        for index in captureBuffers.indices { try device.queue(.capture, index: index) }
        try device.streamOn(.output)
        try device.streamOn(.capture)
        streaming = true
    }

    deinit {
        if streaming {
            device.streamOff(.output)
            device.streamOff(.capture)
        }
        // The camera's buffers the encoder still held (it failed, or was never drained) go back.
        if let importedBuffers { for index in queuedInputs { importedBuffers.release(Int32(index)) } }
    }

    /// The camera's DMABUFs, when the encoder can read frames from them as a copy would lay
    /// them out (the same lines, every frame within a buffer) and its OUTPUT queue imports them,
    /// one OUTPUT buffer per camera buffer; nil to copy instead.
    static func importable(
        _ camera: SharedFrameBuffers, packing: PlanePacking, into device: V4L2CodecDevice
    ) -> [Int32]? {
        guard packing.isContiguous, packing.sizeImage <= camera.length, let descriptors = camera.dmabufs(),
            descriptors.count == camera.count
        else { return nil }
        guard let granted = try? device.importBuffers(.output, count: camera.count), granted >= camera.count else {
            device.freeBuffers(.output)
            return nil
        }
        return descriptors
    }

    /// Throws unless the node at `path` encodes `from` frames to `codec`.
    static func check(path: String, _ codec: HardwareEncoding.Codec, from pixelFormat: VideoFormat.PixelFormat) throws {
        try check(V4L2CodecDevice(path: path), codec, from: pixelFormat)
    }

    /// Throws unless `device` encodes `from` frames to `codec`.
    static func check(
        _ device: V4L2CodecDevice, _ codec: HardwareEncoding.Codec, from pixelFormat: VideoFormat.PixelFormat
    ) throws {
        let coded = device.formats(.capture).filter(\.compressed).map(\.fourcc)
        guard coded.contains(codec.fourcc) else {
            let makes =
                coded.isEmpty ? "it makes no coded format (a decoder?)" : "it makes \(coded.joined(separator: ", "))"
            throw EncodeError(
                .unsupportedFormat,
                "\(device.path): \(device.identity.card) (\(device.identity.driver)) does "
                    + "not encode \(codec.fourcc); \(makes); `fieldcap list` shows the encoders"
            )
        }
        let taken = device.formats(.output).map(\.fourcc)
        guard taken.contains(pixelFormat.rawValue) else {
            throw EncodeError(
                .unsupportedFormat,
                "\(device.path): \(device.identity.card) does not take "
                    + "\(pixelFormat.rawValue) frames; it takes \(taken.joined(separator: ", "))"
            )
        }
    }

    /// The codec controls fieldcap sets where the driver has them: the bit rate asked for, an
    /// I-frame a second (so a salvaged or cut file decodes from within a second of any point), no
    /// B-frames, and H.264's parameter sets with each I-frame rather than once, so every keyframe
    /// starts a decodable stream.
    static func configure(_ device: V4L2CodecDevice, _ encoding: HardwareEncoding, nominalRate: Double) {
        if let bitrate = encoding.bitrate { device.setControl(.bitrate, Int32(clamping: bitrate)) }
        let gop = Int32(max(1, nominalRate.rounded()))
        device.setControl(.gopSize, gop)
        // Frames must leave in capture order: each is written with its capture time, rising.
        device.setControl(.bFrames, 0)
        if encoding.codec == .h264 {
            device.setControl(.h264IFramePeriod, gop)
            device.setControl(.repeatSequenceHeader, 1)
            device.setControl(.headerJoinedWithFirstFrame, 1)
        }
    }

    /// FWHT has no Matroska codec ID: it is stored as `V_MS/VFW/FOURCC`, whose CodecPrivate is
    /// a BITMAPINFOHEADER naming the fourcc.
    static func bitmapInfoHeader(_ codec: HardwareEncoding.Codec, _ format: VideoFormat) -> [UInt8] {
        var header: [UInt8] = []
        func put32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { header += $0 } }
        func put16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { header += $0 } }
        put32(40)  // biSize
        put32(UInt32(format.width))
        put32(UInt32(format.height))
        put16(1)  // biPlanes
        put16(24)  // biBitCount
        header += Array(codec.fourcc.utf8)  // biCompression
        put32(UInt32(format.width * format.height * 3))  // biSizeImage
        for _ in 0..<4 { put32(0) }  // resolution, colours used, colours important
        return header
    }

    public func fill(_ slot: Int, with frame: UnsafeRawBufferPointer) {
        packing.pack(frame, into: outputBuffers[slot].start)
    }

    /// Codes one frame on its own: waits for a free OUTPUT buffer, copies the frame in, queues
    /// it. For callers without an `EncodingWorker` (which fills the buffers itself); not when the
    /// encoder imports the camera's buffers.
    public func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        guard importedBuffers == nil else {
            throw EncodeError(.encoder, "\(device.path): an importing encoder takes the camera's buffers, not copies")
        }
        try collect(emit: emit)
        var waited: Int32 = 0
        while freeOutput.isEmpty {
            guard waited < Self.stallLimitMs else { throw hung() }
            _ = device.wait(timeoutMs: 100)
            waited += 100
            try collect(emit: emit)
        }
        let slot = freeOutput.removeLast()
        fill(slot, with: frame)
        try encode(input: slot, length: frame.count, record: record, emit: emit)
    }

    /// Queues OUTPUT buffer `slot` (filled, or holding the camera's buffer `slot` by DMABUF), then
    /// emits what is ready. When every input is then inside the encoder, waits for one to come
    /// back, so the worker always has a slot to offer again: an encoder that gives none back for
    /// `stallLimitMs` has hung.
    public func encode(input slot: Int, length: Int, record: CaptureRecord, emit: FrameEncoder.Emit) throws {
        let sequence = nextSequence
        nextSequence += 1
        inside[sequence] = record
        let imported =
            importedBuffers.map { V4L2CodecDevice.Imported(descriptor: dmabufs[slot], length: $0.length) }
        try device.queue(
            .output, index: slot, bytesUsed: packing.sizeImage, timestamp: Self.stamp(sequence), dmabuf: imported)
        queuedInputs.insert(slot)
        try collect(emit: emit)
        var waited: Int32 = 0
        while queuedInputs.count >= inputSlots {
            guard waited < Self.stallLimitMs else { throw hung() }
            _ = device.wait(timeoutMs: 100)
            waited += 100
            try collect(emit: emit)
        }
    }

    private func hung() -> EncodeError {
        EncodeError(.encoder, "\(device.path): the encoder returned no buffer for \(Self.stallLimitMs) ms: it has hung")
    }

    /// Drains the encoder (`V4L2_ENC_CMD_STOP`) until its buffer flagged LAST, emitting the
    /// frames it still held.
    public func drain(emit: FrameEncoder.Emit) throws {
        guard streaming else { return }
        try device.startDrain()
        var idle: Int32 = 0
        while true {
            if try collect(emit: emit) { break }
            guard idle < Self.stallLimitMs else {
                throw EncodeError(
                    .encoder,
                    "\(device.path): the encoder did not finish its drain within "
                        + "\(Self.stallLimitMs) ms (\(inside.count) frames still inside)"
                )
            }
            let ready = device.wait(timeoutMs: 100)
            if !ready.capture && !ready.output && !ready.event { idle += 100 }
        }
        guard inside.isEmpty else {
            throw EncodeError(
                .encoder, "\(device.path): the encoder ended its drain with \(inside.count) frames never coded")
        }
    }

    /// Takes back the OUTPUT buffers the encoder is done with and emits the coded frames that
    /// are ready. Returns true once the drain's LAST buffer came.
    @discardableResult
    private func collect(emit: FrameEncoder.Emit) throws -> Bool {
        while case .buffer(let done) = try device.dequeue(.output) {
            queuedInputs.remove(done.index)
            inputReturned(done.index)
        }
        var last = false
        dequeueing: while true {
            switch try device.dequeue(.capture) {
            case .none: break dequeueing
            case .drained:
                last = true
                break dequeueing
            case .buffer(let coded):
                let sequence = Self.sequence(of: coded.timestamp)
                let record = inside[sequence]
                if coded.isError {
                    throw EncodeError(
                        .encoder,
                        "\(device.path): the encoder failed a frame (record "
                            + "\(record.map { String($0.sequence) } ?? "unknown"), V4L2_BUF_FLAG_ERROR)"
                    )
                }
                if let record, coded.bytesUsed > 0 {
                    let buffer = UnsafeRawBufferPointer(
                        start: captureBuffers[coded.index].start, count: coded.bytesUsed)
                    // A buffer of stream headers alone (an encoder in separate-header mode)
                    // codes no picture: its record waits for the buffer that does.
                    if let frame = try framing.frame(buffer, keyframe: coded.isKeyframe) {
                        inside.removeValue(forKey: sequence)
                        try emit(EncodedFrame(record: record, bytes: frame.bytes, isKeyframe: frame.isKeyframe))
                    }
                } else if let record, !coded.isLast {
                    // (An empty LAST buffer is how some drivers end a drain: it codes no frame.)
                    throw EncodeError(
                        .encoder, "\(device.path): the encoder gave an empty buffer for record \(record.sequence)")
                }
                if coded.isLast {
                    last = true
                    break dequeueing
                }
                try device.queue(.capture, index: coded.index)
            }
        }
        // Encoders have no source change of their own; one that sends it says its coded format
        // changed, which a recording in one file cannot follow.
        while let event = device.dequeueEvent() {
            if event == .sourceChange {
                throw EncodeError(
                    .encoder, "\(device.path): the encoder changed its coded format mid-recording (source change)")
            }
        }
        return last
    }

    /// A frame's sequence number as a buffer timestamp, which the driver copies from the raw
    /// buffer to the coded one.
    static func stamp(_ sequence: Int) -> timeval {
        timeval(tv_sec: sequence / 1_000_000, tv_usec: sequence % 1_000_000)
    }

    static func sequence(of stamp: timeval) -> Int { stamp.tv_sec * 1_000_000 + stamp.tv_usec }
}
