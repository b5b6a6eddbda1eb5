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
        }

        /// The whole document, to write back with changes.
        public var document: [String: Any]
        /// `recording` (written at start, never finished), `complete`, `recovered`, `stopped: ...`.
        public var state: String
        public var syncPoint: SyncPoint
        public var streams: [Stream]

        /// Why it stopped (`duration`, `SIGINT`, `disk full ...`), once it did.
        public var stopReason: String? { document["stop_reason"] as? String }
        /// When recording started and stopped (UTC, `2024-03-08T09:28:21.123Z`), once it stopped.
        public var startedUtc: String? { document["started_utc"] as? String }
        public var stoppedUtc: String? { document["stopped_utc"] as? String }
        /// The capture across rigs this session belongs to, if one was named.
        public var captureId: String? { document["capture_id"] as? String }

        public init?(layout: SessionLayout) {
            guard let data = FileManager.default.contents(atPath: layout.sidecar),
                let document = PlainJSON.object(data),
                let hostId = document["host_id"] as? String, StreamID.problem(with: hostId) == nil,
                let sync = document["sync_point"] as? [String: Any],
                let monotonic = PlainJSON.uint64(sync["monotonic_ns"]),
                let wall = PlainJSON.uint64(sync["wall_clock_ns"]),
                let entries = document["streams"] as? [[String: Any]]
            else { return nil }
            var streams: [Stream] = []
            for entry in entries {
                // Ids name files in the directory: only ones the recorder could have written.
                guard let id = entry["id"] as? String, StreamID.problem(with: id) == nil else { return nil }
                var format: VideoFormat?
                if let fields = entry["format"] as? [String: Any] {
                    guard let width = PlainJSON.int(fields["width"]), let height = PlainJSON.int(fields["height"]),
                        let name = fields["pixel_format"] as? String,
                        let pixel = VideoFormat.PixelFormat(rawValue: name),
                        (1...16384).contains(width), (1...16384).contains(height)
                    else { return nil }
                    format = VideoFormat(width: width, height: height, pixelFormat: pixel)
                }
                streams.append(
                    Stream(
                        id: id, kind: (entry["kind"] as? String) ?? (format == nil ? "sensor" : "video"),
                        nominalRate: PlainJSON.double(entry["nominal_rate"]) ?? 0, format: format,
                        linkedPath: entry["linked_path"] as? String))
            }
            self.document = document
            state = (document["state"] as? String) ?? "complete"
            syncPoint = SyncPoint(monotonicNs: monotonic, wallClockNs: wall, hostId: hostId)
            self.streams = streams
        }
    }
}
