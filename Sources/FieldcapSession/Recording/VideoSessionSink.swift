import FieldcapCore
import FieldcapMedia
import SyncField

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
/// Thread-bound per stream: each stream's `write` and `sync` come from one writer thread (the
/// recorder gives each video its own), different streams' from different threads at once; each
/// stream has its own video file and frame log, and the session is thread-safe. `open` and
/// `close` from the controlling thread.
public final class VideoSessionSink: RecordSink {
    private let sessionSink: SyncSessionSink
    private var videos: [MatroskaWriter?] = []
    private var frameLogs: [FrameLog?] = []
    private let layout: SessionLayout
    private let directIO: Bool
    private var streamIDs: [String] = []

    /// A camera's frame log buffer (the disk reserve counts it).
    public static let frameLogBatchBytes = FrameLog.batchBytes

    /// `directIO: false` writes the videos through the page cache even where the filesystem
    /// does direct I/O (`MatroskaWriter`).
    public init(session: SyncSession, directIO: Bool = true) {
        sessionSink = SyncSessionSink(session: session)
        layout = SessionLayout(directory: session.outputDir.path)
        self.directIO = directIO
    }

    /// How each video stream's frames went to its file, by stream id: "direct" (direct I/O) or
    /// "page cache". Read after the recording stopped.
    public var videoWrites: [String: String] {
        Dictionary(
            uniqueKeysWithValues: zip(streamIDs, videos).compactMap { id, video in
                video.map { (id, $0.writesDirect ? "direct" : "page cache") }
            })
    }

    public var session: SyncSession { sessionSink.session }

    public func open(streams: [StreamDescriptor]) throws {
        try sessionSink.open(streams: streams)
        streamIDs = streams.map(\.id)
        videos = try streams.map { descriptor in
            guard descriptor.kind == .video, let format = descriptor.videoFormat else { return nil }
            let path = layout.video(descriptor.id)
            let writer = try MatroskaWriter(
                path: path, format: format, nominalRate: descriptor.nominalRate, directIO: directIO,
                watch: sessionSink.session.diskWatch)
            sessionSink.session.link(descriptor.id, path: path)
            return writer
        }
        frameLogs = try streams.map { descriptor in
            descriptor.kind == .video
                ? try FrameLog(path: layout.frameLog(descriptor.id), watch: sessionSink.session.diskWatch) : nil
        }
    }

    public func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws {
        if let video = videos[stream], let frame {
            try video.writeFrame(frame, captureNs: record.captureNs)
            try frameLogs[stream]?.append(record, frameNumber: frameNumber)
        }
        try sessionSink.write(record, frame: frame, stream: stream, frameNumber: frameNumber)
    }

    public func sync(streams: [Int]) throws {
        // The log first: a cut between the two leaves the log ahead of the video, never behind.
        for stream in streams {
            try frameLogs[stream]?.sync()
            try videos[stream]?.sync()
        }
    }

    public func close() throws -> [String: Int] {
        var firstError: Error?
        for log in frameLogs {
            do { try log?.sync() } catch { firstError = firstError ?? error }
        }
        for video in videos {
            do { try video?.finish() } catch { firstError = firstError ?? error }
        }
        let counts = try sessionSink.close()
        if let firstError { throw firstError }
        return counts
    }
}
