import FieldcapCore
import FieldcapEncode
import FieldcapMedia
import SyncField
import Synchronization

/// Writes a recording: each video stream into its own Matroska file (`{id}.mkv`, linked into the
/// manifest) with a per-frame log (`{id}.frames.ndjson`), every stream's timestamps and sensor
/// values into the SyncField session.
///
/// A frame is written to its video file before its timestamp line, so a timestamp line never
/// refers to a frame the file does not hold.
///
/// After a crash or a power cut the video can hold frames whose timestamp lines were lost: its
/// frames reach the disk at this sink's syncs (their bytes at once, with direct I/O), the
/// timestamp lines at the SyncField writer's own, and a killed process loses the lines still in
/// that writer's batch. The frame log holds each frame's timestamp values too; its line is written
/// right after the frame, and made durable before the video at every sync and at the end, so
/// whatever frames a kill or a cut leaves in the video, the log has their lines and
/// `fieldcap recover` restores them (`CameraRecovery`).
///
/// An encoded camera (`encode=jpeg`) hands its frames to an `EncodingWorker` instead: the
/// worker writes each encoded frame, then its frame log line and its timestamp line, in the same
/// order, numbering frames as it writes them; a frame the worker has no room for is refused
/// (`write` returns false) and counted by the recorder as dropped by the encoder. The worker
/// syncs the log and the video when the writer's `sync` asks. A camera may have several encoding
/// threads (`encoderThreads`), each with an encoder of its own, whose frames are still written in
/// capture order.
///
/// Thread-bound per stream: each stream's `write` and `sync` come from one writer thread (the
/// recorder gives each video its own), different streams' from different threads at once; each
/// stream has its own video file and frame log, and the session is thread-safe. `open` and
/// `close` from the controlling thread.
public final class VideoSessionSink: RecordSink {
    private let sessionSink: SyncSessionSink
    private var videos: [VideoFile?] = []
    private var frameLogs: [FrameLog?] = []
    private let layout: SessionLayout
    private let directIO: Bool
    private let encodings: [String: VideoEncoding]
    /// Live previews of JPEG-encoded cameras, by stream id: given the encoder's JPEGs.
    private let previewTaps: [String: FrameTap]
    private let encoderThreads: [String: Int]
    private let encoderSlots: Int
    private let makeEncoder: EncoderFactory
    private var streamIDs: [String] = []
    /// Per stream: the worker that encodes and writes an encoded camera's frames.
    private var workers: [EncodingWorker?] = []

    /// A camera's frame log buffer (the disk reserve counts it).
    public static let frameLogBatchBytes = FrameLog.batchBytes

    /// Frames an encoder may be behind by before frames are dropped: a second of a 4 fps camera,
    /// a quarter of a 30 fps one's (enough for a busy CPU's hiccup, not for an encoder that is
    /// too slow for the rate, which no queue can save).
    public static let defaultEncoderSlots = 8

    /// Makes a camera's encoder (nil: its frames are stored as they come).
    public typealias EncoderFactory = (EncoderRequest) throws -> FrameEncoder?

    /// What an encoder is made for: the camera's encoding, captured format, nominal rate (a
    /// hardware encoder's rate control needs it) and buffers, which an encoder that imports
    /// them (DMABUF) reads in place.
    public struct EncoderRequest {
        public var encoding: VideoEncoding
        public var captured: VideoFormat
        public var nominalRate: Double
        public var cameraBuffers: SharedFrameBuffers?
    }

    /// `directIO: false` writes the videos through the page cache even where the filesystem
    /// does direct I/O (`MatroskaWriter`); `encodings` says how each camera's frames are stored
    /// (raw when not named), `makeEncoder` what encodes them. `previewTaps` are the live previews
    /// of cameras encoded as JPEG: each JPEG written is offered to its camera's preview, which
    /// then shows it instead of encoding the frame again.
    public init(
        session: SyncSession, directIO: Bool = true, encodings: [String: VideoEncoding] = [:],
        encoderThreads: [String: Int] = [:], previewTaps: [String: FrameTap] = [:],
        encoderSlots: Int = VideoSessionSink.defaultEncoderSlots,
        makeEncoder: @escaping EncoderFactory = {
            try VideoEncoders.make(
                $0.encoding, for: $0.captured, nominalRate: $0.nominalRate, cameraBuffers: $0.cameraBuffers)
        }
    ) {
        self.makeEncoder = makeEncoder
        sessionSink = SyncSessionSink(session: session)
        layout = SessionLayout(directory: session.outputDir.path)
        self.directIO = directIO
        self.encodings = encodings
        self.encoderThreads = encoderThreads
        self.previewTaps = previewTaps
        self.encoderSlots = encoderSlots
    }

    /// How each encoded camera's frames reached its encoder, by stream id: "copied", "copied into
    /// the encoder's buffers" or "DMABUF (the camera's buffers)". Read once opened.
    public var encoderInputs: [String: String] {
        Dictionary(
            uniqueKeysWithValues: zip(streamIDs, workers).compactMap { id, worker in
                worker.map { (id, $0.inputDescription) }
            })
    }

    /// How each video stream's frames went to its file, by stream id: "direct" (direct I/O) or
    /// "page cache". Read after the recording stopped.
    public var videoWrites: [String: String] {
        Dictionary(
            uniqueKeysWithValues: zip(streamIDs, videos).compactMap { id, video in
                video?.writer.map { (id, $0.writesDirect ? "direct" : "page cache") }
            })
    }

    public var session: SyncSession { sessionSink.session }

    public func open(streams: [StreamDescriptor]) throws {
        try sessionSink.open(streams: streams)
        streamIDs = streams.map(\.id)
        // Per stream: its encoders, one per thread (nil: stored as it comes).
        let encoders: [[FrameEncoder]?] = try streams.map { descriptor in
            guard let format = descriptor.videoFormat, let encoding = encodings[descriptor.id] else { return nil }
            let request = EncoderRequest(
                encoding: encoding, captured: format, nominalRate: descriptor.nominalRate,
                cameraBuffers: descriptor.sharedBuffers)
            guard let first = try makeEncoder(request) else { return nil }
            let threads = encoderThreads[descriptor.id] ?? 1
            guard threads > 1 else { return [first] }
            guard first.codesFramesAlone else {
                throw EncodeError(
                    .unsupportedFormat,
                    "\(descriptor.id): \(first.name) codes frames against "
                        + "each other: one encoding thread only (threads=1)"
                )
            }
            return try [first] + (1..<threads).map { _ in try makeEncoder(request)! }
        }
        videos = try zip(streams, encoders).map { descriptor, encoders in
            guard descriptor.kind == .video, let format = descriptor.videoFormat else { return nil }
            let encoder = encoders?.first
            let path = layout.video(descriptor.id)
            let (directIO, watch) = (directIO, sessionSink.session.diskWatch)
            let file = VideoFile { codecPrivate in
                try MatroskaWriter(
                    path: path, format: encoder?.encodedFormat ?? format, nominalRate: descriptor.nominalRate,
                    codecPrivate: codecPrivate, directIO: directIO, watch: watch)
            }
            if encoder?.isCodecPrivateReady ?? true { _ = try file.opened(codecPrivate: encoder?.codecPrivate ?? []) }
            sessionSink.session.link(descriptor.id, path: path)
            return file
        }
        frameLogs = try streams.map { descriptor in
            descriptor.kind == .video
                ? try FrameLog(path: layout.frameLog(descriptor.id), watch: sessionSink.session.diskWatch) : nil
        }
        workers = streams.indices.map { stream in
            guard let encoders = encoders[stream], let video = videos[stream], let log = frameLogs[stream],
                let format = streams[stream].videoFormat
            else { return nil }
            return encodingWorker(
                stream: stream, id: streams[stream].id, format: format, encoders: encoders, video: video, log: log)
        }
    }

    /// The worker of an encoded camera: it writes each encoded frame as `write` writes a raw
    /// one (the video, the frame log, the timestamp line), numbering them itself.
    private func encodingWorker(
        stream: Int, id: String, format: VideoFormat, encoders: [FrameEncoder], video: VideoFile, log: FrameLog
    ) -> EncodingWorker {
        let sessionSink = sessionSink
        let encoder = encoders[0]
        let preview = encoder.encodedFormat.pixelFormat == .mjpeg ? previewTaps[id] : nil
        var frameNumber = 0
        return EncodingWorker(
            name: "fc-enc-\(id)", encoders: encoders, slots: encoderSlots,
            slotBytes: format.pixelFormat.frameBytes(width: format.width, height: format.height) ?? 1,
            output: { frame in
                let record = frame.record
                try video.opened(codecPrivate: encoder.codecPrivate)
                    .writeFrame(frame.bytes, captureNs: record.captureNs, keyframe: frame.isKeyframe)
                try log.append(record, frameNumber: frameNumber)
                try sessionSink.write(record, frame: frame.bytes, stream: stream, frameNumber: frameNumber)
                frameNumber += 1
                preview?.offer(record, bytes: frame.bytes, isJPEG: true)
            },
            sync: {
                try log.sync()
                try video.writer?.sync()
            })
    }

    /// An encoded camera's frame is refused (false) when its encoder is behind by every slot.
    public func write(
        _ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int
    ) throws
        -> Bool
    {
        if let worker = workers[stream], let frame { return try worker.offer(record, frame: frame) }
        if let video = videos[stream]?.writer, let frame {
            try video.writeFrame(frame, captureNs: record.captureNs)
            try frameLogs[stream]?.append(record, frameNumber: frameNumber)
        }
        return try sessionSink.write(record, frame: frame, stream: stream, frameNumber: frameNumber)
    }

    public func sync(streams: [Int]) throws {
        // The log first: a cut between the two leaves the log ahead of the video, never behind.
        for stream in streams {
            if let worker = workers[stream] {
                try worker.requestSync()
                continue
            }
            try frameLogs[stream]?.sync()
            try videos[stream]?.writer?.sync()
        }
    }

    public func close() throws -> [String: Int] {
        var firstError: Error?
        // The encoders first: they write the frames they hold into the logs and videos.
        for worker in workers {
            do { try worker?.finish() } catch { firstError = firstError ?? error }
        }
        for log in frameLogs {
            do { try log?.sync() } catch { firstError = firstError ?? error }
        }
        for video in videos {
            // A file still waiting for its encoder's first frame is made now, empty.
            do { try video?.opened(codecPrivate: []).finish() } catch { firstError = firstError ?? error }
        }
        let counts = try sessionSink.close()
        // An encoding worker's frames accepted but never written are not counted as written.
        if let firstError { throw SinkClosedWithError(firstError, counts: counts) }
        return counts
    }
}

/// A stream's video file. An encoder whose CodecPrivate comes with its first frames (a hardware
/// H.264 encoder's parameter sets) has its file made when its first frame is written, with them;
/// every other stream's is made at `open`.
///
/// Thread-bound: made, written and synced by the stream's writer or encoding worker; `close`
/// reads it once the worker is joined.
final class VideoFile {
    private let create: ([UInt8]) throws -> MatroskaWriter
    private(set) var writer: MatroskaWriter?

    init(create: @escaping ([UInt8]) throws -> MatroskaWriter) { self.create = create }

    /// The file, made with `codecPrivate` if it is not yet.
    func opened(codecPrivate: @autoclosure () -> [UInt8]) throws -> MatroskaWriter {
        if let writer { return writer }
        let made = try create(codecPrivate())
        writer = made
        return made
    }
}
