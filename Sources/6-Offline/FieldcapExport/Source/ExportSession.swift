import FieldcapCore
import FieldcapSession
import FoundationEssentials
import SyncField

/// A finished fieldcap session, as the exports read it: its streams from the sidecar (formats,
/// channels), its sync point, and each stream's files. Opening it validates it as `fieldcap
/// validate` does, videos included: an export starts only from a session that holds together.
public struct ExportSession {
    public struct Stream: Sendable {
        public var id: String
        /// A camera's format, as its frames are read: for FFV1, the captured format the frames
        /// decode to; nil for a sensor stream.
        public var format: VideoFormat?
        /// The video holds FFV1 frames, decoded to `format` as they are read.
        public var decodesFFV1 = false
        /// A sensor stream's channels, in the order the recorder gave them.
        public var channels: [String]
        public var nominalRate: Double
        /// The device it was recorded from (`/dev/video0`, `iio:device0`, `synthetic:...`).
        public var device: String
        /// A camera that recorded nothing in this session: the manifest links its video (the
        /// track, no frame) and lists no timestamps file, as a segment that closed while the
        /// device was away; or a sensor with no file (away all along, a feed no program fed).
        /// Its exports hold nothing of it.
        public var recordedNothing = false
        /// Why the exports cannot read this camera's frames (a hardware encoder's H.264 or HEVC),
        /// for a session opened `keepingUnreadableCameras`; nil when they can.
        public var unreadable: String?
        /// A sensor a local program fed (`--sensor feed:NAME`), or gpsd (`--sensor gpsd`): its
        /// records' channels have any shape (the sidecar's `kind` is `feed`).
        public var isFeed = false
        /// A GNSS receiver's fixes, as gpsd reported them (`--sensor gpsd`: a `gnss` section).
        public var isGNSS = false

        public var isCamera: Bool { format != nil }
    }

    public let directory: String
    public let layout: SessionLayout
    public let syncPoint: SyncPoint
    public let streams: [Stream]
    /// The whole sidecar, for what an export copies as it is (host name, kernel, times).
    public let document: [String: JSONValue]

    /// Opens and validates `directory`; `progress` hears how far validation has read.
    /// `keepingUnreadableCameras`: a camera whose frames cannot be read is kept with the reason
    /// (`Stream.unreadable`), for a reader that checks the others, rather than refusing the session.
    public init(
        directory: String, progress: ((SessionValidator.Progress) -> Void)? = nil,
        keepingUnreadableCameras: Bool = false
    ) throws(ExportError) {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory
        else {
            throw ExportError(
                .session, "\(directory) is not a directory: give a session (or a recording with --from/--to)")
        }
        let layout = SessionLayout(directory: directory)
        guard FileManager.default.fileExists(atPath: layout.manifest) else {
            throw ExportError(.session, "\(directory) is not a session (it has no \(SessionLayout.manifestName))")
        }
        guard let contents = Sidecar.Contents(layout: layout) else {
            throw ExportError(
                .session,
                "\(directory) has no readable \(SessionLayout.sidecarName): export reads sessions fieldcap recorded")
        }
        guard contents.state != "recording" else {
            throw ExportError(
                .session, "the session \(directory) is not finished (run `fieldcap recover` on it first)")
        }
        let report = SessionValidator.validateWithVideos(directory: directory, progress: progress)
        if let problem = report.problems.first {
            let more = report.problems.count > 1 ? " (and \(report.problems.count - 1) more problems)" : ""
            throw ExportError(
                .session,
                "the session \(directory) does not validate: \(problem)\(more); run `fieldcap validate \(directory)`")
        }
        let entries = contents.document["streams"]?.arrayValue(of: \.objectValue) ?? []
        var streams: [Stream] = []
        for (index, stream) in contents.streams.enumerated() {
            let entry = index < entries.count ? entries[index] : [:]
            var format = stream.format
            var unreadable: String?
            if let stored = format?.pixelFormat, [.h264, .hevc, .fwht].contains(stored) {
                unreadable =
                    "\(stream.id) is stored as \(stored.rawValue) by a hardware encoder, which the exports cannot "
                    + "decode yet; play or convert \(SessionLayout.videoName(stream.id)) with ffmpeg or GStreamer"
                if !keepingUnreadableCameras { throw ExportError(.session, unreadable!) }
            }
            let ffv1 = format?.pixelFormat == .ffv1
            if ffv1, let stored = format {
                // FFV1 decodes to the camera's own bytes: the exports read them as that format.
                guard let encoding = entry["encoding"]?.objectValue,
                    let name = encoding["captured_pixel_format"]?.stringValue,
                    let captured = VideoFormat.PixelFormat(rawValue: name),
                    VideoFormat.PixelFormat.captured.contains(captured)
                else {
                    throw ExportError(
                        .session,
                        "\(stream.id) is stored as FFV1 but \(SessionLayout.sidecarName) "
                            + "names no captured_pixel_format to decode it to"
                    )
                }
                format = VideoFormat(width: stored.width, height: stored.height, pixelFormat: captured)
            }
            streams.append(
                Stream(
                    id: stream.id, format: format, decodesFFV1: ffv1,
                    channels: entry["channels"]?.arrayValue(of: \.stringValue) ?? [], nominalRate: stream.nominalRate,
                    device: entry["device"]?.stringValue ?? "",
                    recordedNothing: format != nil
                        ? AbsentStream.recordedNothing(directory: directory, id: stream.id)
                        : AbsentStream.sensorRecordedNothing(layout, id: stream.id),
                    unreadable: unreadable, isFeed: entry["kind"]?.stringValue == "feed",
                    isGNSS: entry["gnss"]?.objectValue != nil)
            )
        }
        self.streams = streams
        self.directory = directory
        self.layout = layout
        self.syncPoint = contents.syncPoint
        self.document = contents.document
    }

    /// `capture_ns` (CLOCK_MONOTONIC_RAW) as wall-clock nanoseconds since the epoch, through the
    /// sync point: the one mapping every export uses, recorded with the MCAP file.
    public func wallClockNs(captureNs: UInt64) -> UInt64 {
        let offset = Int64(bitPattern: captureNs &- syncPoint.monotonicNs)
        return UInt64(bitPattern: Int64(bitPattern: syncPoint.wallClockNs) &+ offset)
    }

    /// The streams `ids` names, in the session's order; all when nil.
    public func streams(named ids: [String]?) throws(ExportError) -> [Stream] {
        guard let ids else { return streams }
        for id in ids where !streams.contains(where: { $0.id == id }) {
            throw ExportError(
                .request,
                "--streams: the session has no stream \(id) (it has \(streams.map(\.id).joined(separator: ", ")))")
        }
        return streams.filter { ids.contains($0.id) }
    }
}
