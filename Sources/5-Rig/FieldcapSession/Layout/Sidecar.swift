import FieldcapClockQuality
import FieldcapCore
import FieldcapEncode
import FieldcapOutput
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap.json`: what the SyncField format has no place for. It sits beside the SyncField
/// files, which stay byte-compatible with the SDK. The one model of it: written at start
/// (`writeStart`) and at the end (`write`), read back by recovery (`Contents`), rewritten with
/// its notes (`store`), all in one spelling (`bytes`).
public struct Sidecar {
    /// The version fieldcap writes into its sidecar (and `fieldcap --version` prints).
    public static let fieldcapVersion = "0.1.0-dev"

    public var hostId: String
    public var syncPoint: SyncPoint
    public var startedWall: Date
    public var stoppedWall: Date
    /// The stop in CLOCK_MONOTONIC_RAW, the clock of every `capture_ns`: what `validate` holds
    /// the last lines against, whatever the wall clock did meanwhile (nil: not written).
    public var stoppedMonotonicNs: UInt64?
    /// Where this session's time begins for the times a device was away: a segment's scheduled
    /// start (its sync point may be taken before it); nil: the sync point.
    public var startedMonotonicNs: UInt64?
    public var stopReason: String
    public var sources: [CaptureSource]
    public var summary: [Recorder.StreamSummary]
    /// fieldcap.json's `state`: "complete", or why the recording is not (a write that failed).
    public var state = "complete"
    /// How each video's frames went to its file (`VideoSessionSink.videoWrites`).
    public var videoWrites: [String: String] = [:]
    /// Writes and syncs that took `diskStallNs` or longer, per file (`DiskWatch.summary`).
    public var diskStalls: [DiskWatch.Summary] = []
    public var diskStallNs: UInt64 = DiskWatch().stallNs
    public var layout: SessionLayout
    /// The directory as the session's `link()` paths spell it.
    public var linkDirectory: String
    /// The sources' reports, when taken earlier: a segment finished while capture goes on
    /// cannot read its sources (their counters are the capture threads'), and gives what they
    /// reported at start, without `details`. nil reads each source's report now.
    public var reports: [SourceReport]?
    /// A segment of a segmented recording: its number, and where the recording's index is.
    public var segment: Int?
    /// The cameras' calibration (`--intrinsics`), each beside its camera's format.
    public var calibration: SessionCalibration?
    /// How each camera's frames are stored, by stream id (`encode=`); raw when not named.
    public var encodings: [String: VideoEncoding] = [:]
    /// Encoding threads per camera where more than one (`threads=`).
    public var encoderThreads: [String: Int] = [:]
    /// How each encoded camera's frames reached its encoder (`VideoSessionSink.encoderInputs`).
    public var encoderInputs: [String: String] = [:]
    /// How the wall clock was disciplined at the sync point (chrony, PTP, or not at all), and
    /// the bound on its error: `wall_clock`. nil when it was not read.
    public var wallClock: ClockQuality?
    /// The capture this session belongs to, across rigs (`--capture-id`, a fleet's start).
    public var captureId: String?

    public init(
        hostId: String, syncPoint: SyncPoint, startedWall: Date, stoppedWall: Date, stopReason: String,
        sources: [CaptureSource], summary: [Recorder.StreamSummary], videoWrites: [String: String],
        diskStalls: [DiskWatch.Summary], diskStallNs: UInt64, layout: SessionLayout, linkDirectory: String
    ) {
        self.hostId = hostId
        self.syncPoint = syncPoint
        self.startedWall = startedWall
        self.stoppedWall = stoppedWall
        self.stopReason = stopReason
        self.sources = sources
        self.summary = summary
        self.videoWrites = videoWrites
        self.diskStalls = diskStalls
        self.diskStallNs = diskStallNs
        self.layout = layout
        self.linkDirectory = linkDirectory
    }

    static var kernel: String {
        var names = utsname()
        uname(&names)
        func field<T>(_ value: inout T) -> String {
            withUnsafeBytes(of: &value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "\(field(&names.sysname)) \(field(&names.release)) \(field(&names.version)) \(field(&names.machine))"
    }

    /// A source's own section, with `seconds_after_start` beside every RAW time
    /// (`monotonic_raw_ns`) in it: when a stream ended, when its clock mapping was at its worst.
    static func section(_ value: JSONValue, syncPoint: SyncPoint) -> JSONValue {
        switch value {
        case .array(let values): return .array(values.map { section($0, syncPoint: syncPoint) })
        case .object(var members):
            if case .integer(let raw)? = members["monotonic_raw_ns"] {
                members["seconds_after_start"] = .double(Double(raw - Int64(syncPoint.monotonicNs)) / 1e9)
            }
            return .object(members.mapValues { section($0, syncPoint: syncPoint) })
        default: return value
        }
    }

    /// What a stream is, as known at start: enough for `fieldcap recover` to finish a session.
    /// An encoded camera's `format` is what its file holds (MJPG for `jpeg`), and its
    /// `encoding` what it was captured as: readers of the video need only the first.
    static func streamEntry(
        _ descriptor: StreamDescriptor, linkDirectory: String, calibration: SessionCalibration? = nil,
        encoding: VideoEncoding = .raw, threads: Int = 1, input: String? = nil
    ) -> [String: JSONValue] {
        var entry: [String: JSONValue] = [
            "id": .string(descriptor.id), "kind": .string(descriptor.kind.rawValue),
            "device": .string(descriptor.device),
            "nominal_rate": .double(descriptor.nominalRate),
        ]
        if let captured = descriptor.videoFormat {
            let format = encoding.storedFormat(for: captured)
            entry["format"] = [
                "width": JSONValue(format.width), "height": JSONValue(format.height),
                "pixel_format": .string(format.pixelFormat.rawValue),
            ]
            if encoding.encodes(captured) {
                var encodingEntry = encodingEntry(encoding, captured: captured)
                encodingEntry["threads"] = JSONValue(threads)
                if let input { encodingEntry["input"] = .string(input) }
                entry["encoding"] = .object(encodingEntry)
            }
            entry["video_path"] = .string(SessionLayout.videoName(descriptor.id))
            entry["frames_path"] = .string(SessionLayout.frameLogName(descriptor.id))
            entry["linked_path"] = .string("\(linkDirectory)/\(SessionLayout.videoName(descriptor.id))")
        }
        if !descriptor.channels.isEmpty { entry["channels"] = .array(descriptor.channels.map(JSONValue.string)) }
        if let camera = calibration?.cameras[descriptor.id] { entry["calibration"] = .object(camera.sidecarEntry) }
        return entry
    }

    /// `{"codec": "jpeg", "quality": 85, "encoder": "libjpeg-turbo", "captured_pixel_format": "YUYV"}`.
    static func encodingEntry(_ encoding: VideoEncoding, captured: VideoFormat) -> [String: JSONValue] {
        var entry: [String: JSONValue] = [
            "codec": .string(encoding.codecName), "captured_pixel_format": .string(captured.pixelFormat.rawValue),
        ]
        switch encoding {
        case .raw: break
        case .jpeg(let quality):
            entry["quality"] = JSONValue(quality)
            entry["encoder"] = "libjpeg-turbo"
        case .ffv1:
            entry["encoder"] = "libavcodec"
            entry["version"] = JSONValue(FFV1Encoder.version)
        case .hardware(let hardware):
            entry["encoder"] = "v4l2"
            if let device = hardware.device { entry["device"] = .string(device) }
            if let bitrate = hardware.bitrate { entry["bitrate"] = JSONValue(bitrate) }
        }
        return entry
    }

    /// A stream's `drops`: every record it lost (`count`, `records` as runs of sequence
    /// numbers, `records_truncated` when a table of runs filled and its last run spans all the
    /// rest), and for an encoded camera the same split by reason: `ring` (the writer was behind
    /// capture) and `encoder` (the encoder was behind the writer); for a fed stream, `ring` and
    /// `writer` (the session's writer queue was half full, kept for the other streams).
    static func dropsEntry(_ stream: Recorder.StreamSummary, encoded: Bool, fed: Bool = false) -> [String: JSONValue] {
        func runs(_ runs: [ClosedRange<UInt64>]) -> JSONValue {
            .array(runs.map { [JSONValue(Int($0.lowerBound)), JSONValue(Int($0.upperBound))] })
        }
        var entry: [String: JSONValue] = [
            "count": JSONValue(stream.dropped + stream.encoderDropped),
            "records": runs(DropRuns.merged(stream.droppedRuns, stream.encoderDroppedRuns)),
        ]
        if stream.droppedRunsTruncated { entry["records_truncated"] = true }
        if encoded || fed || stream.encoderDropped > 0 {
            entry["reasons"] = [
                "ring": ["count": JSONValue(stream.dropped), "records": runs(stream.droppedRuns)],
                fed ? "writer" : "encoder": [
                    "count": JSONValue(stream.encoderDropped), "records": runs(stream.encoderDroppedRuns),
                ],
            ]
        }
        return entry
    }

    /// `fieldcap.json` as recording starts, with `"state": "recording"`: the host id, the sync
    /// point and the streams, which is what `fieldcap recover` needs if the process never gets
    /// to write the rest (SIGKILL, a power cut). `write()` replaces it at the end.
    /// `linkDirectory` is the directory as the session's `link()` paths spell it (the manifest
    /// gives each video's path as it was linked).
    public static func writeStart(
        hostId: String, syncPoint: SyncPoint, sources: [CaptureSource], layout: SessionLayout, linkDirectory: String,
        segment: Int? = nil, calibration: SessionCalibration? = nil, encodings: [String: VideoEncoding] = [:],
        encoderThreads: [String: Int] = [:], wallClock: ClockQuality? = nil, captureId: String? = nil
    ) throws {
        var document: [String: JSONValue] = [
            "fieldcap_version": .string(fieldcapVersion), "state": "recording", "host_id": .string(hostId),
            "sync_point": syncPointEntry(syncPoint),
            "streams": .array(
                sources.map {
                    .object(
                        streamEntry(
                            $0.descriptor, linkDirectory: linkDirectory, calibration: calibration,
                            encoding: encodings[$0.descriptor.id] ?? .raw,
                            threads: encoderThreads[$0.descriptor.id] ?? 1))
                }),
        ]
        if let segment { document["segment"] = segmentEntry(segment) }
        if let calibration { document["calibration_file"] = .object(calibration.sidecarEntry) }
        if let wallClock {
            document["wall_clock"] = .object(wallClock.sidecarEntry(syncPointMonotonicNs: syncPoint.monotonicNs))
        }
        if let captureId { document["capture_id"] = .string(captureId) }
        try store(document, layout: layout)
    }

    /// A segment's place: its number, and the recording's index one directory up.
    static func segmentEntry(_ number: Int) -> JSONValue {
        ["number": JSONValue(number), "recording_index": "../recording.json"]
    }

    /// `{"monotonic_ns": ..., "wall_clock_ns": ...}`.
    static func syncPointEntry(_ syncPoint: SyncPoint) -> JSONValue {
        ["monotonic_ns": JSONValue(syncPoint.monotonicNs), "wall_clock_ns": JSONValue(syncPoint.wallClockNs)]
    }

    /// Writes `fieldcap.json` (sorted keys, atomically, fsynced).
    public static func store(_ document: [String: JSONValue], layout: SessionLayout) throws {
        try AtomicFile.write(try bytes(document), to: layout.sidecar)
    }

    /// A time in `fieldcap.json`: `2024-03-08T09:28:21.123Z`, spelled as the sync point's
    /// `iso_datetime` rather than with ISO8601DateFormatter, whose ICU set-up was a tenth of an
    /// IMU recording's start-up on a slow CPU.
    public static func utc(_ date: Date) -> String {
        SyncPoint.isoDatetime(wallClockNs: UInt64(max(0, date.timeIntervalSince1970 * 1e9)))
    }

    /// Writes the sidecar of a recording that ended (`state: complete` unless `state` says why not).
    public func write() throws {
        let streams: [JSONValue] = zip(sources, summary).enumerated().map { index, pair in
            let (source, stream) = pair
            let encoding = encodings[source.descriptor.id] ?? .raw
            var entry = Self.streamEntry(
                source.descriptor, linkDirectory: linkDirectory, calibration: calibration, encoding: encoding,
                threads: encoderThreads[source.descriptor.id] ?? 1, input: encoderInputs[source.descriptor.id])
            entry["written"] = JSONValue(stream.written)
            if let writes = videoWrites[source.descriptor.id] { entry["video_writes"] = .string(writes) }
            // Records are the source's own sequence numbers (frames or samples since start).
            entry["drops"] = .object(
                Self.dropsEntry(
                    stream, encoded: source.descriptor.videoFormat.map { encoding.encodes($0) } ?? false,
                    fed: source.descriptor.kind == .feed))
            let report = reports?[index] ?? source.report
            entry["timestamps"] = .object(report.timestamps.mapValues(JSONValue.string))
            if let details = report.details { entry[report.kind] = Self.section(details, syncPoint: syncPoint) }
            let untilNs = stoppedMonotonicNs ?? MonotonicClock.now()
            if !stream.absences.isEmpty {
                entry["away"] = .array(
                    stream.absences.map { awayEntry($0, rate: source.descriptor.nominalRate, untilNs: untilNs) })
            }
            if let error = stream.captureError {
                entry["ended_early"] = .string(error)
                if let at = stream.endedEarlyAtNs { entry["ended_early_at"] = instant(at) }
            } else if let last = stream.absences.last, last.returnedNs.map({ $0 > untilNs }) ?? true {
                // Away at the end: the stream ended early here as one whose device is gone does,
                // and every reader of ended_early reads it so.
                entry["ended_early"] = .string(
                    "\(last.reason); "
                        + (last.refusal.map {
                            last.returnedAs == nil ? "not waited for: \($0)" : "it came back and was refused: \($0)"
                        } ?? "it had not come back by the end of this session"))
                entry["ended_early_at"] = instant(last.leftNs)
            }
            return .object(entry)
        }
        var document: [String: JSONValue] = [
            "fieldcap_version": .string(Self.fieldcapVersion),
            "host_id": .string(hostId),
            "hostname": .string(ProcessInfo.processInfo.hostName),
            "kernel": .string(Self.kernel),
            "started_utc": .string(Self.utc(startedWall)),
            "stopped_utc": .string(Self.utc(stoppedWall)),
            "stop_reason": .string(stopReason),
            "state": .string(state),
            "sync_point": Self.syncPointEntry(syncPoint),
            "streams": .array(streams),
            "disk_stalls": diskStallsEntry,
        ]
        if let stoppedMonotonicNs { document["stopped_monotonic_raw_ns"] = JSONValue(stoppedMonotonicNs) }
        if let segment { document["segment"] = Self.segmentEntry(segment) }
        if let calibration { document["calibration_file"] = .object(calibration.sidecarEntry) }
        if let wallClock {
            document["wall_clock"] = .object(wallClock.sidecarEntry(syncPointMonotonicNs: syncPoint.monotonicNs))
        }
        if let gnss = gnssTimeEntry() { document["gnss_time"] = gnss }
        if let captureId { document["capture_id"] = .string(captureId) }
        try Self.store(document, layout: layout)
    }

    /// Beside `wall_clock`: how GNSS time and this host's `CLOCK_REALTIME` differed, as the first
    /// GNSS stream's gpsd reported it (a pulse's offset, `PPS`, where it had one; else the fix
    /// messages', `TOFF`), and the sync point's `wall_clock_ns` in GNSS time by the first offset.
    func gnssTimeEntry() -> JSONValue? {
        for (index, source) in sources.enumerated() {
            let report = reports?[index] ?? source.report
            guard report.kind == "gnss", let offsets = report.details?["time_offsets"]?.objectValue,
                let (kind, chosen) = ["PPS", "TOFF"].lazy.compactMap({ kind in offsets[kind].map { (kind, $0) } })
                    .first,
                let first = chosen["first_ns"]?.int64Value
            else { continue }
            return [
                "stream": .string(source.descriptor.id), "source": .string(kind),
                "offset": "GNSS time minus this host's CLOCK_REALTIME, in ns, as gpsd measured it",
                "offsets": .object(offsets),
                "sync_point_gnss_ns": JSONValue(Int64(clamping: syncPoint.wallClockNs) &+ first),
            ]
        }
        return nil
    }

    /// A moment in `CLOCK_MONOTONIC_RAW`, and in seconds after the sync point.
    func instant(_ ns: UInt64) -> JSONValue {
        [
            "monotonic_raw_ns": JSONValue(ns),
            "seconds_after_start": .double(Double(Int64(bitPattern: ns &- syncPoint.monotonicNs)) / 1e9),
        ]
    }

    /// One time a stream's device was away, as far as this session reaches (from its sync point
    /// to `untilNs`): when it left and why, when it came back (null: not within this session), as
    /// which node, how long and how many records at the nominal rate within this session (a time
    /// away over a segment boundary counts in each segment for its own part); or why the device
    /// that came back was refused.
    func awayEntry(_ absence: Absence, rate: Double, untilNs: UInt64) -> JSONValue {
        let returned = absence.returnedNs.flatMap { $0 <= untilNs ? $0 : nil }
        let fromNs = startedMonotonicNs ?? syncPoint.monotonicNs
        var entry: [String: JSONValue] = [
            "left_at": instant(absence.leftNs), "reason": .string(absence.reason),
            "returned_at": returned.map(instant) ?? .null,
            "seconds": .double(Double(absence.nanoseconds(fromNs: fromNs, untilNs: untilNs)) / 1e9),
            "records_at_nominal_rate": JSONValue(absence.recordsWorth(rate: rate, fromNs: fromNs, untilNs: untilNs)),
        ]
        if returned != nil, let node = absence.returnedAs { entry["returned_as"] = .string(node) }
        if let refusal = absence.refusal { entry["refused"] = .string(refusal) }
        if !absence.notes.isEmpty { entry["notes"] = .array(absence.notes.map(JSONValue.string)) }
        return .object(entry)
    }

    /// Which files waited for the disk for `diskStallNs` or longer in one operation, how often,
    /// how long, and when first (seconds after the sync point): a slow card or a stalled disk.
    var diskStallsEntry: JSONValue {
        [
            "threshold_seconds": .double(Double(diskStallNs) / 1e9),
            "files": .array(
                diskStalls.map {
                    [
                        "file": .string($0.file), "operation": .string($0.operation.rawValue),
                        "count": JSONValue($0.count), "seconds": .double($0.totalSeconds),
                        "longest_seconds": .double($0.longestSeconds),
                        "first_at_seconds":
                            .double(Double(Int64(bitPattern: $0.firstStartedNs &- syncPoint.monotonicNs)) / 1e9),
                    ]
                }),
        ]
    }
}
