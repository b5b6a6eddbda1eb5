import FieldcapCore
import FoundationEssentials
import SyncField

extension Sidecar {
    /// What `fieldcap.json` says about a session, as the recorder wrote it at start (or at the
    /// end): what recovery needs to finish it.
    public struct Contents {
        public struct Stream: Sendable {
            public var id: String
            /// `video` or `sensor`.
            public var kind: String
            public var nominalRate: Double
            public var format: VideoFormat?
            public var linkedPath: String?
            /// What an encoded camera captured (its `encoding`'s `captured_pixel_format`): what an
            /// FFV1 video decodes to. Nil when the sidecar names none fieldcap captures.
            public var capturedPixelFormat: VideoFormat.PixelFormat?
        }

        /// The whole document, to write back with changes.
        public var document: [String: JSONValue]
        /// `recording` (written at start, never finished), `complete`, `recovered`, `stopped: ...`.
        public var state: String
        public var syncPoint: SyncPoint
        public var streams: [Stream]

        /// Why it stopped (`duration`, `SIGINT`, `disk full ...`), once it did.
        public var stopReason: String? { document["stop_reason"]?.stringValue }
        /// When recording started and stopped (UTC, `2024-03-08T09:28:21.123Z`), once it stopped.
        public var startedUtc: String? { document["started_utc"]?.stringValue }
        public var stoppedUtc: String? { document["stopped_utc"]?.stringValue }
        /// The capture across rigs this session belongs to, if one was named.
        public var captureId: String? { document["capture_id"]?.stringValue }

        public init?(layout: SessionLayout) {
            guard let data = FileManager.default.contents(atPath: layout.sidecar),
                let document = JSONValue.parse(data)?.objectValue,
                let hostId = document["host_id"]?.stringValue, StreamID.problem(with: hostId) == nil,
                let sync = document["sync_point"]?.objectValue,
                let monotonic = sync["monotonic_ns"]?.uint64Value,
                let wall = sync["wall_clock_ns"]?.uint64Value,
                let entries = document["streams"]?.arrayValue(of: \.objectValue)
            else { return nil }
            var streams: [Stream] = []
            for entry in entries {
                // Ids name files in the directory: only ones the recorder could have written.
                guard let id = entry["id"]?.stringValue, StreamID.problem(with: id) == nil else { return nil }
                var format: VideoFormat?
                if let fields = entry["format"]?.objectValue {
                    guard let width = fields["width"]?.intValue, let height = fields["height"]?.intValue,
                        let name = fields["pixel_format"]?.stringValue,
                        let pixel = VideoFormat.PixelFormat(rawValue: name),
                        (1...16384).contains(width), (1...16384).contains(height)
                    else { return nil }
                    format = VideoFormat(width: width, height: height, pixelFormat: pixel)
                }
                streams.append(
                    Stream(
                        id: id, kind: entry["kind"]?.stringValue ?? (format == nil ? "sensor" : "video"),
                        nominalRate: entry["nominal_rate"]?.doubleValue ?? 0, format: format,
                        linkedPath: entry["linked_path"]?.stringValue,
                        capturedPixelFormat: entry["encoding"]?["captured_pixel_format"]?.stringValue
                            .flatMap(VideoFormat.PixelFormat.init(rawValue:))
                            .flatMap { VideoFormat.PixelFormat.captured.contains($0) ? $0 : nil }))
            }
            self.document = document
            state = document["state"]?.stringValue ?? "complete"
            syncPoint = SyncPoint(monotonicNs: monotonic, wallClockNs: wall, hostId: hostId)
            self.streams = streams
        }
    }
}
