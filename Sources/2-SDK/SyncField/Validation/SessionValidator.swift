import FieldcapOutput
import FoundationEssentials
import Glibc

/// Checks a session directory against every rule of the SyncField 0.1 format: the files, every
/// line's keys, order, types and spelling, the rules the alignment service relies on, and the
/// agreement between the manifest, the sync point and the files.
public struct SessionValidator {
    public struct Problem: Equatable, Sendable, CustomStringConvertible {
        /// The file, relative to the session directory.
        public var file: String
        /// 1-based line number, when the problem is on one line.
        public var line: Int?
        public var message: String

        public init(file: String, line: Int? = nil, message: String) {
            self.file = file
            self.line = line
            self.message = message
        }

        public var description: String {
            if let line { return "\(file):\(line): \(message)" }
            return "\(file): \(message)"
        }
    }

    public struct Report: Sendable {
        public var problems: [Problem] = []
        /// Things the format allows but a user should know (a session the service would drop).
        public var warnings: [Problem] = []
        public var streamCount = 0
        public var lineCount = 0
        /// The holes longer than the caller's threshold between consecutive timestamp lines
        /// (`validate(directory:progress:holesLongerThan:)`), in file order: not problems of the
        /// format, which has no opinion on a stream's rate, but facts for a caller that has one.
        public var holes: [Hole] = []
        public var isValid: Bool { problems.isEmpty }
    }

    /// Two consecutive timestamp lines of a stream whose `capture_ns` are further apart than the
    /// threshold the caller gave for that stream.
    public struct Hole: Equatable, Sendable {
        public var stream: String
        /// The 1-based line of the record after the hole.
        public var line: Int
        public var previousFrameNumber: Int64
        public var previousCaptureNs: UInt64
        public var frameNumber: Int64
        public var captureNs: UInt64

        public init(
            stream: String, line: Int, previousFrameNumber: Int64, previousCaptureNs: UInt64, frameNumber: Int64,
            captureNs: UInt64
        ) {
            self.stream = stream
            self.line = line
            self.previousFrameNumber = previousFrameNumber
            self.previousCaptureNs = previousCaptureNs
            self.frameNumber = frameNumber
            self.captureNs = captureNs
        }

        public var lengthNs: UInt64 { captureNs - previousCaptureNs }
    }

    public static let timestampKeys = ["capture_ns", "clock_domain", "clock_source", "frame_number", "uncertainty_ns"]
    public static let sensorKeys = [
        "capture_ns", "channels", "clock_domain", "clock_source", "frame_number", "uncertainty_ns",
    ]
    static let syncPointKeys = [
        "host_id", "iso_datetime", "monotonic_ns", "sdk_version", "timestamp_ms", "wall_clock_ns",
    ]

    /// How far validation has come: the stream file being read, the bytes of the session's
    /// stream files read so far, and their total.
    public struct Progress: Sendable {
        public var file: String
        public var bytesDone: Int
        public var bytesTotal: Int
    }

    public let directory: String
    private var report = Report()
    private let keyOrder = KeyOrderCache()
    private var progress: ((Progress) -> Void)?
    private var bytesDone = 0
    private var bytesTotal = 0
    private var holeThreshold: ((String) -> UInt64?)?

    public init(directory: String) { self.directory = directory }

    /// Validates the session in `directory`. `progress`, if given, is called as the stream files
    /// are read (every megabyte or so, and once at the end of each file): an hour of a 1 kHz
    /// IMU is millions of lines.
    public static func validate(directory: String, progress: ((Progress) -> Void)? = nil) -> Report {
        validate(directory: directory, progress: progress, holesLongerThan: nil)
    }

    /// Validates the session as `validate(directory:progress:)` does and, as it reads each
    /// timestamps file, lists in `Report.holes` every pair of consecutive lines further apart
    /// than `holesLongerThan(stream id)` nanoseconds (nil: that stream is not looked at). The
    /// holes come from the same read of the lines as the rules: a caller judging them reads no
    /// file twice.
    public static func validate(
        directory: String, progress: ((Progress) -> Void)? = nil, holesLongerThan: ((String) -> UInt64?)?
    ) -> Report {
        var validator = SessionValidator(directory: directory)
        validator.progress = progress
        validator.holeThreshold = holesLongerThan
        validator.run()
        return validator.report
    }

    private mutating func problem(_ file: String, _ line: Int? = nil, _ message: String) {
        report.problems.append(Problem(file: file, line: line, message: message))
    }

    // MARK: - The whole session

    private mutating func run() {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory else {
            problem(directory, nil, "is not a directory")
            return
        }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        let timestampIds = names.filter { $0.hasSuffix(SyncFieldFiles.timestampsSuffix) }.map {
            String($0.dropLast(SyncFieldFiles.timestampsSuffix.count))
        }
        let sensorIds = names.filter {
            $0.hasSuffix(SyncFieldFiles.sensorSuffix) && !$0.hasSuffix(SyncFieldFiles.timestampsSuffix)
        }
        .map { String($0.dropLast(SyncFieldFiles.sensorSuffix.count)) }

        for name in timestampIds.map(SyncFieldFiles.timestamps) + sensorIds.map(SyncFieldFiles.sensor) {
            var info = stat()
            if stat("\(directory)/\(name)", &info) == 0 { bytesTotal += Int(info.st_size) }
        }
        let syncPoint = checkSyncPoint()
        let hostId = syncPoint?["host_id"]?.stringValue
        var timestampLines: [String: [TimestampFields]] = [:]
        for id in timestampIds {
            timestampLines[id] = checkStreamFile(
                SyncFieldFiles.timestamps(id), keys: Self.timestampKeys, hostId: hostId,
                holes: holeThreshold?(id).map { (id, $0) })
        }
        for id in sensorIds {
            let sensorLines = checkStreamFile(SyncFieldFiles.sensor(id), keys: Self.sensorKeys, hostId: hostId)
            if let timestamps = timestampLines[id] {
                checkSensorMatchesTimestamps(id: id, sensor: sensorLines, timestamps: timestamps)
            } else {
                problem("\(id).jsonl", nil, "has no \(id).timestamps.jsonl; every sensor line needs its timestamp line")
            }
        }
        checkManifest(hostId: hostId, timestampLines: timestampLines, sensorIds: Set(sensorIds))
        report.lineCount = timestampLines.values.reduce(0) { $0 + $1.count }
        if report.streamCount < 2 && report.problems.isEmpty {
            report.warnings.append(
                Problem(
                    file: SyncFieldFiles.manifest, line: nil,
                    message:
                        "has \(report.streamCount) stream(s); the alignment service drops sync jobs with fewer than two"
                ))
        }
    }

    // MARK: - JSONL streams

    struct TimestampFields: Equatable {
        var line: Int
        var captureNs: UInt64
        var frameNumber: Int64
        var uncertaintyNs: UInt64
    }

    /// Checks every line of one JSONL file; returns the fields of the lines that parsed.
    private mutating func checkStreamFile(
        _ name: String, keys expectedKeys: [String], hostId: String?,
        holes: (stream: String, thresholdNs: UInt64)? = nil
    ) -> [TimestampFields] {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else {
            problem(name, nil, "cannot be read")
            return []
        }
        let bytes = [UInt8](data)
        var fields: [TimestampFields] = []
        var previousCapture: UInt64?
        var lineNumber = 0
        var start = 0
        let problemsBefore = report.problems.count
        var reportedAt = 0
        defer {
            bytesDone += bytes.count
            progress?(Progress(file: name, bytesDone: bytesDone, bytesTotal: max(bytesTotal, bytesDone)))
        }
        while start < bytes.count {
            if start - reportedAt >= 1 << 20, let progress {
                reportedAt = start
                progress(
                    Progress(file: name, bytesDone: bytesDone + start, bytesTotal: max(bytesTotal, bytesDone + start)))
            }
            lineNumber += 1
            guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                problem(
                    name, lineNumber,
                    "the last line is incomplete (no newline): a write was cut off; `fieldcap recover` trims it")
                break
            }
            let line = bytes[start..<end]
            start = end + 1
            if report.problems.count - problemsBefore >= 50 { continue }
            guard let parsed = parseLine(line, file: name, line: lineNumber) else { continue }
            guard
                let values = checkLineFields(
                    parsed, raw: line, file: name, line: lineNumber, keys: expectedKeys, hostId: hostId)
            else { continue }
            if let previousCapture, values.captureNs < previousCapture {
                problem(
                    name, lineNumber,
                    "capture_ns \(values.captureNs) is before the previous "
                        + "line's \(previousCapture); it must never decrease"
                )
            }
            if let holes, let previous = fields.last, values.captureNs > previous.captureNs,
                values.captureNs - previous.captureNs > holes.thresholdNs
            {
                report.holes.append(
                    Hole(
                        stream: holes.stream, line: lineNumber, previousFrameNumber: previous.frameNumber,
                        previousCaptureNs: previous.captureNs, frameNumber: values.frameNumber,
                        captureNs: values.captureNs))
            }
            previousCapture = values.captureNs
            fields.append(values)
        }
        let extra = report.problems.count - problemsBefore - 50
        if extra > 0 {
            report.problems.removeLast(extra)
            problem(name, nil, "\(extra) more problems in this file not shown")
        }
        return fields
    }

    private mutating func parseLine(_ line: ArraySlice<UInt8>, file: String, line lineNumber: Int) -> ParsedJSON? {
        if line.isEmpty {
            problem(file, lineNumber, "is empty; every line is one JSON object")
            return nil
        }
        do {
            return try JSONTextParser.parse(line)
        } catch {
            problem(file, lineNumber, "is not valid JSON: \(error.message) at column \(error.column)")
            return nil
        }
    }

    private mutating func checkLineFields(
        _ parsed: ParsedJSON, raw: ArraySlice<UInt8>, file: String, line: Int, keys expectedKeys: [String],
        hostId: String?
    ) -> TimestampFields? {
        guard case .object = parsed else {
            problem(file, line, "is \(parsed.typeName), not an object")
            return nil
        }
        var healthy = true
        if parsed.keys != expectedKeys {
            let have = Set(parsed.keys)
            let missing = expectedKeys.filter { !have.contains($0) }
            let unexpected = parsed.keys.filter { !expectedKeys.contains($0) }
            if !missing.isEmpty { problem(file, line, "lacks \(missing.joined(separator: ", "))") }
            if !unexpected.isEmpty { problem(file, line, "has unexpected keys \(unexpected.joined(separator: ", "))") }
            if missing.isEmpty && unexpected.isEmpty {
                problem(
                    file, line,
                    "keys are in the order \(parsed.keys.joined(separator: ",")); "
                        + "the SDK writes \(expectedKeys.joined(separator: ","))"
                )
            }
            healthy = false
        }
        let capture = parsed["capture_ns"]?.unsignedValue
        if parsed["capture_ns"] != nil && capture == nil {
            problem(file, line, "capture_ns must be a non-negative integer of nanoseconds")
            healthy = false
        }
        let frame = parsed["frame_number"]?.integerValue
        if parsed["frame_number"] != nil && frame == nil {
            problem(file, line, "frame_number must be an integer")
            healthy = false
        }
        let uncertainty = parsed["uncertainty_ns"]?.unsignedValue
        if parsed["uncertainty_ns"] != nil && uncertainty == nil {
            problem(file, line, "uncertainty_ns must be a non-negative integer")
            healthy = false
        }
        if let source = parsed["clock_source"], source.stringValue != syncFieldClockSource {
            problem(file, line, "clock_source must be \"host_monotonic\"")
            healthy = false
        }
        if let domain = parsed["clock_domain"] {
            if let text = domain.stringValue {
                if let hostId, text != hostId {
                    problem(file, line, "clock_domain \"\(text)\" is not the session's host_id \"\(hostId)\"")
                    healthy = false
                }
            } else {
                problem(file, line, "clock_domain must be a string")
                healthy = false
            }
        }
        if let channels = parsed["channels"] {
            healthy = checkChannels(channels, path: "channels", file: file, line: line) && healthy
        }
        let canonical = healthy ? CanonicalJSON.bytes(parsed, keyOrder: keyOrder) : []
        if healthy && canonical != Array(raw) {
            let column =
                zip(canonical, raw).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(canonical.count, raw.count)
            problem(file, line, "is not spelled as the SDK writes it (first difference at column \(column + 1))")
        }
        guard let capture, let frame, let uncertainty else { return nil }
        return TimestampFields(line: line, captureNs: capture, frameNumber: frame, uncertaintyNs: uncertainty)
    }

    /// Channels are objects, arrays and numbers; objects' keys in Foundation's order; numbers
    /// spelled as the SDK spells them.
    private mutating func checkChannels(_ value: ParsedJSON, path: String, file: String, line: Int) -> Bool {
        switch value {
        case .object(let members):
            var healthy = true
            let keys = members.map(\.key)
            if Set(keys).count != keys.count {
                problem(file, line, "\(path) repeats a key")
                healthy = false
            } else if keys != keyOrder.sorted(keys) {
                problem(
                    file, line,
                    "\(path) keys are not in Foundation's sorted order "
                        + "(expected \(keyOrder.sorted(keys).joined(separator: ", ")))"
                )
                healthy = false
            }
            for member in members {
                healthy = checkChannels(member.value, path: "\(path).\(member.key)", file: file, line: line) && healthy
            }
            return healthy
        case .array(let elements):
            var healthy = true
            for (index, element) in elements.enumerated() {
                healthy = checkChannels(element, path: "\(path).\(index)", file: file, line: line) && healthy
            }
            return healthy
        case .number(let text):
            if !CanonicalJSON.isCanonical(number: text) {
                problem(
                    file, line,
                    "\(path) is spelled \(text); the SDK spells that number "
                        + "\(CanonicalJSON.spellings(ofNumber: text).last ?? "differently")"
                )
                return false
            }
            return true
        default:
            if path == "channels" {
                problem(file, line, "channels must be an object, not \(value.typeName)")
            } else {
                problem(file, line, "\(path) is \(value.typeName); channel leaves must be numbers")
            }
            return false
        }
    }

    private mutating func checkSensorMatchesTimestamps(
        id: String, sensor: [TimestampFields], timestamps: [TimestampFields]
    ) {
        // A stream may mix stamp() and record(): its sensor lines are then a subsequence of its
        // timestamp lines, matched in order.
        var cursor = 0
        for sample in sensor {
            while cursor < timestamps.count,
                (timestamps[cursor].captureNs, timestamps[cursor].frameNumber, timestamps[cursor].uncertaintyNs)
                    != (sample.captureNs, sample.frameNumber, sample.uncertaintyNs)
            {
                cursor += 1
            }
            if cursor == timestamps.count {
                problem(
                    "\(id).jsonl", sample.line,
                    "has no matching line (same capture_ns \(sample.captureNs), frame_number "
                        + "\(sample.frameNumber), uncertainty_ns) in \(id).timestamps.jsonl"
                )
                return
            }
            cursor += 1
        }
    }

    // MARK: - sync_point.json and manifest.json

    private mutating func readPretty(_ name: String) -> ParsedJSON? {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else {
            problem(name, nil, "is missing: the session was not stopped cleanly; `fieldcap recover` can write it")
            return nil
        }
        do {
            return try JSONTextParser.parse([UInt8](data))
        } catch {
            problem(name, nil, "is not valid JSON: \(error.message) at byte \(error.column)")
            return nil
        }
    }

    private mutating func checkPrettyBytes(_ name: String, expected: PrettyJSONValue) {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else { return }
        if [UInt8](data) != expected.sdkPrettyBytes() {
            problem(
                name, nil,
                "is not laid out as the SDK writes it (2-space indent, sorted keys, \": \", trailing newline)")
        }
    }

    private mutating func checkSyncPoint() -> ParsedJSON? {
        let name = SyncFieldFiles.syncPoint
        guard let point = readPretty(name) else { return nil }
        guard case .object = point else {
            problem(name, nil, "must be an object")
            return nil
        }
        if Set(point.keys) != Set(Self.syncPointKeys) {
            problem(
                name, nil,
                "has keys \(point.keys.sorted().joined(separator: ", ")); "
                    + "expected \(Self.syncPointKeys.joined(separator: ", "))"
            )
        }
        if point["sdk_version"]?.stringValue != syncFieldVersion { problem(name, nil, "sdk_version must be \"0.1.0\"") }
        guard let host = point["host_id"]?.stringValue else {
            problem(name, nil, "host_id must be a string")
            return nil
        }
        let monotonic = point["monotonic_ns"]?.unsignedValue
        let wall = point["wall_clock_ns"]?.unsignedValue
        let millis = point["timestamp_ms"]?.unsignedValue
        if monotonic == nil { problem(name, nil, "monotonic_ns must be a non-negative integer") }
        if wall == nil { problem(name, nil, "wall_clock_ns must be a non-negative integer") }
        if millis == nil { problem(name, nil, "timestamp_ms must be a non-negative integer") }
        if let wall, let millis, millis != wall / 1_000_000 {
            problem(name, nil, "timestamp_ms \(millis) is not wall_clock_ns / 1000000 (\(wall / 1_000_000))")
        }
        if let iso = point["iso_datetime"]?.stringValue {
            if !Self.isISODatetime(iso) {
                problem(name, nil, "iso_datetime \"\(iso)\" is not UTC with milliseconds like 2024-03-08T09:28:21.123Z")
            } else if let wall, let seconds = Self.epochSeconds(iso), abs(seconds - Double(wall) / 1e9) > 1 {
                problem(name, nil, "iso_datetime \"\(iso)\" is more than a second from wall_clock_ns")
            }
        } else {
            problem(name, nil, "iso_datetime must be a string")
        }
        if let monotonic, let wall, let millis, let iso = point["iso_datetime"]?.stringValue {
            checkPrettyBytes(
                name,
                expected: .object([
                    "host_id": .string(host), "iso_datetime": .string(iso), "monotonic_ns": .unsigned(monotonic),
                    "sdk_version": .string(point["sdk_version"]?.stringValue ?? ""), "timestamp_ms": .unsigned(millis),
                    "wall_clock_ns": .unsigned(wall),
                ]))
        }
        return point
    }

    static func isISODatetime(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        let pattern = Array("dddd-dd-ddTdd:dd:dd.dddZ".utf8)
        guard bytes.count == pattern.count else { return false }
        for (byte, expected) in zip(bytes, pattern) {
            if expected == UInt8(ascii: "d") {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return false }
            } else if byte != expected {
                return false
            }
        }
        return true
    }

    /// Seconds since the epoch of an ISO 8601 UTC time with milliseconds, as the SDK writes them.
    public static func epochSeconds(_ iso: String) -> Double? {
        var parts = tm()
        let fields = iso.split(whereSeparator: { "-T:.Z".contains($0) }).compactMap { Int32($0) }
        guard fields.count == 7 else { return nil }
        parts.tm_year = fields[0] - 1900
        parts.tm_mon = fields[1] - 1
        parts.tm_mday = fields[2]
        parts.tm_hour = fields[3]
        parts.tm_min = fields[4]
        parts.tm_sec = fields[5]
        return Double(timegm(&parts)) + Double(fields[6]) / 1000
    }

    private mutating func checkManifest(
        hostId: String?, timestampLines: [String: [TimestampFields]], sensorIds: Set<String>
    ) {
        let name = SyncFieldFiles.manifest
        guard let manifest = readPretty(name) else { return }
        guard case .object = manifest else {
            problem(name, nil, "must be an object")
            return
        }
        if Set(manifest.keys) != ["host_id", "sdk_version", "streams"] {
            problem(
                name, nil,
                "has keys \(manifest.keys.sorted().joined(separator: ", ")); expected host_id, sdk_version, streams")
        }
        if manifest["sdk_version"]?.stringValue != syncFieldVersion {
            problem(name, nil, "sdk_version must be \"0.1.0\"")
        }
        let manifestHost = manifest["host_id"]?.stringValue
        if manifestHost == nil { problem(name, nil, "host_id must be a string") }
        if let manifestHost, let hostId, manifestHost != hostId {
            problem(name, nil, "host_id \"\(manifestHost)\" differs from sync_point.json's \"\(hostId)\"")
        }
        guard case .object(let streams)? = manifest["streams"] else {
            problem(name, nil, "streams must be an object")
            return
        }
        report.streamCount = streams.count
        var listed: [String: PrettyJSONValue] = [:]
        for stream in streams {
            let id = stream.key
            let entry = stream.value
            if let reason = StreamID.problem(with: id) {
                problem(name, nil, "stream id \(SyncFieldError.quoted(id)) is unsafe: \(reason)")
            }
            guard case .object = entry else {
                problem(name, nil, "streams.\(id) must be an object")
                continue
            }
            let allowed: Set<String> = ["type", "timestamps_path", "frame_count", "sensor_path", "path"]
            let unexpected = entry.keys.filter { !allowed.contains($0) }
            if !unexpected.isEmpty {
                problem(name, nil, "streams.\(id) has unexpected keys \(unexpected.joined(separator: ", "))")
            }
            let type = entry["type"]?.stringValue
            if type != "video" && type != "sensor" {
                problem(name, nil, "streams.\(id).type must be \"video\" or \"sensor\"")
            }
            var fields: [String: PrettyJSONValue] = [:]
            if let type { fields["type"] = .string(type) }
            if timestampLines[id] != nil {
                if entry["timestamps_path"]?.stringValue != SyncFieldFiles.timestamps(id) {
                    problem(name, nil, "streams.\(id).timestamps_path must be \"\(id).timestamps.jsonl\"")
                }
                if let count = entry["frame_count"]?.integerValue {
                    let actual = SyncSession.countLines(path: "\(directory)/\(SyncFieldFiles.timestamps(id))")
                    if count != actual {
                        problem(
                            name, nil,
                            "streams.\(id).frame_count is \(count) but \(id).timestamps.jsonl has \(actual) lines")
                    }
                    fields["frame_count"] = .integer(count)
                } else {
                    problem(name, nil, "streams.\(id).frame_count must be an integer")
                }
                fields["timestamps_path"] = .string(SyncFieldFiles.timestamps(id))
            } else if entry["timestamps_path"] != nil || entry["frame_count"] != nil {
                problem(name, nil, "streams.\(id) names a timestamps file, but \(id).timestamps.jsonl does not exist")
            }
            if sensorIds.contains(id) {
                if type != "sensor" {
                    problem(name, nil, "streams.\(id) has a sensor file \(id).jsonl, so its type must be \"sensor\"")
                }
                if entry["sensor_path"]?.stringValue != SyncFieldFiles.sensor(id) {
                    problem(name, nil, "streams.\(id).sensor_path must be \"\(id).jsonl\"")
                }
                fields["sensor_path"] = .string(SyncFieldFiles.sensor(id))
            } else if type == "sensor" {
                problem(name, nil, "streams.\(id) is a sensor, but \(id).jsonl does not exist")
            } else if entry["sensor_path"] != nil {
                problem(name, nil, "streams.\(id).sensor_path is set, but \(id).jsonl does not exist")
            }
            if let path = entry["path"] {
                if let text = path.stringValue {
                    fields["path"] = .string(text)
                } else {
                    problem(name, nil, "streams.\(id).path must be a string")
                }
            }
            listed[id] = .object(fields)
        }
        for id in timestampLines.keys.sorted() where !streams.contains(where: { $0.key == id }) {
            problem(name, nil, "does not list stream \(SyncFieldError.quoted(id)), which has \(id).timestamps.jsonl")
        }
        for id in sensorIds.sorted() where !streams.contains(where: { $0.key == id }) {
            problem(name, nil, "does not list stream \(SyncFieldError.quoted(id)), which has \(id).jsonl")
        }
        if report.problems.allSatisfy({ $0.file != name }), let manifestHost {
            checkPrettyBytes(
                name,
                expected: .object([
                    "host_id": .string(manifestHost), "sdk_version": .string(syncFieldVersion),
                    "streams": .object(listed),
                ]))
        }
    }
}
