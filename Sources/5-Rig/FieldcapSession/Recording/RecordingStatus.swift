import FieldcapCore
import FoundationEssentials
import SyncField

/// A recording's live figures, as every front end shows them: the terminal's status line,
/// `--json` progress lines and the service's `/api/v1/status` read the same values.
public struct RecordingStatus: Sendable {
    public struct Stream: Sendable, Equatable {
        public var id: String
        public var written: Int
        public var queued: Int
        /// Records fieldcap had no room for.
        public var dropped: Int
        /// Of those, records the stream's encoder had no room for (reason `encoder`).
        public var encoderDropped = 0
        /// Records written per second since the previous status.
        public var rate: Double
        /// Records the device itself skipped (nil: the source cannot tell).
        public var deviceGaps: Int?
        /// Whether the stream's device is away now (nil: the source does not wait for its device).
        public var away: Bool? = nil
        /// How often its device went away so far (nil as `away`).
        public var timesAway: Int? = nil
    }

    /// Seconds since capture started.
    public var elapsed: Double
    public var streams: [Stream]
    /// Bytes the recording holds on disk.
    public var bytes: UInt64
    public var diskFree: UInt64?
    /// Files whose write or sync is stalled now, or whose stall ended since the previous status.
    public var stalls: [DiskWatch.Stall]
}

/// Turns a recording's counters into `RecordingStatus`es: rates over the time between two
/// statuses, so it is one reader's (one recording's runner).
public final class RecordingStatusMeter {
    public let directory: String
    private let sources: [CaptureSource]
    private let diskStalls: DiskStalls?
    private var previous: [Int]
    private var previousElapsed = 0.0

    /// Where the disk's figures come from: a running recording's gauge (read off the caller's
    /// thread, so a dead share never holds a status), or, without one, the directory's files
    /// read here.
    public enum Disk: Sendable {
        case gauge(DiskGauge)
        case directory
    }
    private let disk: Disk

    public init(directory: String, sources: [CaptureSource], diskStalls: DiskStalls?, disk: Disk = .directory) {
        self.directory = directory
        self.sources = sources
        self.diskStalls = diskStalls
        self.disk = disk
        previous = Array(repeating: 0, count: sources.count)
    }

    /// For a running controller: its directory, disk stalls and disk gauge.
    public convenience init(controller: RecordingController) {
        self.init(
            directory: controller.directory ?? "", sources: controller.sources, diskStalls: controller.diskStalls,
            disk: controller.diskGauge.map { .gauge($0) } ?? .directory)
    }

    /// The sizes of a session directory's files.
    public static func fileBytes(in directory: String) -> UInt64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)")
            // Essentials gives the size as UInt (full Foundation bridged it to any number type).
            return total + UInt64((attributes?[.size] as? UInt) ?? 0)
        }
    }

    private var bytes: UInt64 {
        if case .gauge(let gauge) = disk { return gauge.recordingBytes }
        return Self.fileBytes(in: directory)
    }

    private var diskFree: UInt64? {
        if case .gauge(let gauge) = disk { return gauge.freeBytes }
        return freeBytes(at: directory)
    }

    /// The status now. Stalls are taken at every call, so one that ended is reported once.
    public func sample(
        _ statistics: [Recorder.StreamProgress], elapsed: Double
    )
        -> RecordingStatus
    {
        let interval = max(0.001, elapsed - previousElapsed)
        let streams = statistics.enumerated().map { index, stream in
            var entry = RecordingStatus.Stream(
                id: stream.id, written: stream.written, queued: stream.queued,
                dropped: stream.dropped + stream.encoderDropped, encoderDropped: stream.encoderDropped,
                rate: Double(stream.written - (index < previous.count ? previous[index] : 0)) / interval,
                deviceGaps: index < sources.count ? sources[index].deviceGaps?.count : nil)
            if index < sources.count, let presence = sources[index].presence {
                entry.away = presence.isAway
                entry.timesAway = presence.absences.count
            }
            return entry
        }
        previous = statistics.map(\.written)
        previousElapsed = elapsed
        return RecordingStatus(
            elapsed: elapsed, streams: streams, bytes: bytes, diskFree: diskFree,
            stalls: diskStalls?.takeRecentStalls() ?? [])
    }
}
