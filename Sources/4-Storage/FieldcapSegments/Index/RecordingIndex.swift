import FieldcapOutput
import FieldcapSystem
import FoundationEssentials
import SyncField

/// `recording.json`: what a segmented recording holds, so a reader never opens every segment.
/// Not a SyncField file: each segment is a SyncField session of its own; this lists them, with
/// their times in UTC and in `CLOCK_MONOTONIC_RAW`, per-stream counts, sizes and states, and
/// what the storage budget deleted. Rewritten (atomically, fsynced) whenever a segment starts,
/// ends or is deleted.
public struct RecordingIndex: Codable, Sendable, Equatable {
    public static let fileName = "recording.json"
    /// What `format` says: a reader checks it before trusting the rest.
    public static let formatName = "fieldcap-recording/0.1"

    public var format = RecordingIndex.formatName
    public var fieldcapVersion: String
    public var hostId: String
    /// `recording` while fieldcap writes it, then `complete`, or `stopped: REASON`, `recovered`.
    public var state: String
    public var stopReason: String?
    public var segmentSeconds: Double
    public var maxStorageBytes: UInt64?
    public var keepSeconds: Double?
    public var streams: [Stream]
    public var segments: [Segment]
    /// The moments marked on the recording, in the order taken (nil: none yet; an index written
    /// before marks existed).
    public var marks: [Mark]?

    public struct Stream: Codable, Sendable, Equatable {
        public var id: String
        public var kind: String
        public var device: String
        public var nominalRate: Double
        /// Video streams: `640x480 YUYV`.
        public var format: String?

        public init(id: String, kind: String, device: String, nominalRate: Double, format: String?) {
            self.id = id
            self.kind = kind
            self.device = device
            self.nominalRate = nominalRate
            self.format = format
        }
    }

    public struct Segment: Codable, Sendable, Equatable {
        public enum State: String, Codable, Sendable {
            /// Being written (or, after a crash, waiting for `fieldcap recover`).
            case recording
            case complete
            /// Finished by `fieldcap recover`.
            case recovered
            /// Removed by the storage budget; its entry stays, with its counts.
            case deleted
        }

        public var number: Int
        /// The segment's directory, relative to the recording's.
        public var directory: String
        public var state: State
        /// Where the schedule put its start and end, in `CLOCK_MONOTONIC_RAW` and in UTC
        /// (through the segment's sync point).
        public var startMonotonicRawNs: UInt64
        public var endMonotonicRawNs: UInt64
        public var startUtc: String
        public var endUtc: String
        /// Bytes on disk (allocated blocks) of its files, once finished.
        public var bytes: UInt64?
        /// Per stream id, once finished.
        public var streams: [String: StreamCounts]?
        public var deleted: Deletion?
        /// Why the storage budget did not delete it, when it should have.
        public var kept: String?

        public init(
            number: Int, directory: String, state: State, startMonotonicRawNs: UInt64, endMonotonicRawNs: UInt64,
            startUtc: String, endUtc: String
        ) {
            self.number = number
            self.directory = directory
            self.state = state
            self.startMonotonicRawNs = startMonotonicRawNs
            self.endMonotonicRawNs = endMonotonicRawNs
            self.startUtc = startUtc
            self.endUtc = endUtc
        }
    }

    public struct StreamCounts: Codable, Sendable, Equatable {
        /// Frames or samples in the segment.
        public var records: Int
        public var firstCaptureNs: UInt64?
        public var lastCaptureNs: UInt64?
        public var firstSequence: UInt64?
        public var lastSequence: UInt64?
        /// Records missing by the device's count, before and between this segment's records (frames
        /// an encoder dropped included: they are not in the segment either).
        public var missing: Int
        /// How far after the segment's scheduled start its first record was captured, in
        /// seconds: the precision of the cut (nil without records).
        public var firstAfterStartSeconds: Double?
        /// The times the stream's device was away within the segment (nil: it never was).
        public var away: [Away]?

        public init(
            records: Int, firstCaptureNs: UInt64?, lastCaptureNs: UInt64?, firstSequence: UInt64?,
            lastSequence: UInt64?, missing: Int, firstAfterStartSeconds: Double?
        ) {
            self.records = records
            self.firstCaptureNs = firstCaptureNs
            self.lastCaptureNs = lastCaptureNs
            self.firstSequence = firstSequence
            self.lastSequence = lastSequence
            self.missing = missing
            self.firstAfterStartSeconds = firstAfterStartSeconds
        }
    }

    /// A time a stream's device was away (unplugged), within one segment: when it left, when
    /// it came back (nil: not within the segment), and how many records that time holds at the
    /// stream's nominal rate.
    public struct Away: Codable, Sendable, Equatable {
        public var leftMonotonicRawNs: UInt64
        public var returnedMonotonicRawNs: UInt64?
        public var recordsAtNominalRate: Int

        public init(leftMonotonicRawNs: UInt64, returnedMonotonicRawNs: UInt64?, recordsAtNominalRate: Int) {
            self.leftMonotonicRawNs = leftMonotonicRawNs
            self.returnedMonotonicRawNs = returnedMonotonicRawNs
            self.recordsAtNominalRate = recordsAtNominalRate
        }

        enum CodingKeys: String, CodingKey {
            case leftMonotonicRawNs = "left_monotonic_raw_ns", returnedMonotonicRawNs = "returned_monotonic_raw_ns"
            case recordsAtNominalRate = "records_at_nominal_rate"
        }
    }

    public struct Deletion: Codable, Sendable, Equatable {
        public var utc: String
        /// `--max-storage 16G`, `--keep 2h`, `fieldcap sessions rm`.
        public var reason: String

        public init(utc: String, reason: String) {
            self.utc = utc
            self.reason = reason
        }
    }

    public init(
        fieldcapVersion: String, hostId: String, segmentSeconds: Double, maxStorageBytes: UInt64?,
        keepSeconds: Double?, streams: [Stream]
    ) {
        self.fieldcapVersion = fieldcapVersion
        self.hostId = hostId
        state = "recording"
        self.segmentSeconds = segmentSeconds
        self.maxStorageBytes = maxStorageBytes
        self.keepSeconds = keepSeconds
        self.streams = streams
        segments = []
    }

    enum CodingKeys: String, CodingKey {
        case format, fieldcapVersion = "fieldcap_version", hostId = "host_id", state, stopReason = "stop_reason"
        case segmentSeconds = "segment_seconds", maxStorageBytes = "max_storage_bytes", keepSeconds = "keep_seconds"
        case streams, segments, marks
    }

    /// The index of the recording in `directory`, or nil when there is none or it is not one.
    public static func read(directory: String) -> RecordingIndex? {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(fileName)") else { return nil }
        guard let index = try? JSONDecoder().decode(RecordingIndex.self, from: data), index.format == formatName,
            // A segment is a directory of the recording: a name that leads elsewhere ("../x",
            // "/etc") is damage, and nothing reads or writes through it.
            index.segments.allSatisfy({ PathName.isPlainName($0.directory) })
        else { return nil }
        return index
    }

    /// Writes it into `directory`: a temporary file, fsynced, renamed over the old one.
    public func write(directory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var bytes = [UInt8](try encoder.encode(self))
        bytes.append(UInt8(ascii: "\n"))
        try AtomicFile.write(bytes, to: "\(directory)/\(Self.fileName)")
    }

    /// The segments still on disk (not deleted), oldest first.
    public var presentSegments: [Segment] { segments.filter { $0.state != .deleted } }
}

extension RecordingIndex.Segment {
    enum CodingKeys: String, CodingKey {
        case number, directory, state, startMonotonicRawNs = "start_monotonic_raw_ns"
        case endMonotonicRawNs = "end_monotonic_raw_ns", startUtc = "start_utc", endUtc = "end_utc", bytes, streams
        case deleted, kept
    }
}

extension RecordingIndex.StreamCounts {
    enum CodingKeys: String, CodingKey {
        case records, firstCaptureNs = "first_capture_ns", lastCaptureNs = "last_capture_ns"
        case firstSequence = "first_sequence", lastSequence = "last_sequence", missing
        case firstAfterStartSeconds = "first_after_start_seconds", away
    }
}

extension RecordingIndex.Stream {
    enum CodingKeys: String, CodingKey {
        case id, kind, device, nominalRate = "nominal_rate", format
    }
}
