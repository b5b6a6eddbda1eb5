import FieldcapCore
import FoundationEssentials
import SyncField

extension SessionValidator {
    /// The shortest hole between two consecutive records of a stream that must be documented:
    /// the larger of 2 s and 50 periods at the stream's nominal rate. Far above what a healthy
    /// recording shows: a frame late by a TCG guest's or a loaded host's scheduling (tens of
    /// milliseconds, a few hundred at worst), a ring drop or a kernel sequence gap of a few
    /// frames, a camera that halves its rate in the dark; 50 periods keeps slow streams (a
    /// 1 Hz sensor) from tripping it at every missed record. An unplugged camera is gone for
    /// seconds: a hole of that size is what fieldcap.json must account for.
    static let holeFloorNs: UInt64 = 2_000_000_000
    static let holePeriods = 50.0

    static func holeThresholdNs(rate: Double) -> UInt64 {
        guard rate > 0, rate.isFinite else { return holeFloorNs }
        return max(holeFloorNs, UInt64(min(holePeriods / rate, 1e9) * 1e9))
    }

    /// What fieldcap.json says about the time one stream has no records for.
    struct StreamGaps {
        var id: String
        var rate: Double
        var thresholdNs: UInt64
        /// Well-formed `away` entries: when the device left, when it came back (nil: not within
        /// the session, so to its end).
        var away: [(leftNs: UInt64, returnedNs: UInt64?)] = []
        var endedEarlyNs: UInt64?
        /// The sequence numbers the stream documents as lost: `drops.records` and the device's
        /// own gaps (`v4l2.kernel_sequence_gaps`, `iio.timeline_gaps`), and their counts.
        var missingRuns: [ClosedRange<UInt64>] = []
        var missingCount = 0
        /// Where those are written, for the message: `drops` or `drops or v4l2.kernel_sequence_gaps`.
        var documentedIn = "drops"
    }

    /// The streams of a finished fieldcap.json whose holes are judged, and the problems with
    /// their `away` entries. Only streams with `drops`, which the recorder writes at the stop
    /// beside `away`, are judged: a sidecar written at start (a killed recording, a recovered
    /// one) or by extract does not say where its streams were away, so cannot explain a hole.
    static func sidecarGaps(_ sidecar: JSONValue?) -> (streams: [String: StreamGaps], problems: [Problem]) {
        guard let entries = sidecar?["streams"]?.arrayValue else { return ([:], []) }
        var streams: [String: StreamGaps] = [:]
        var problems: [Problem] = []
        for entry in entries {
            guard let id = entry["id"]?.stringValue, streams[id] == nil else { continue }
            // A rate fieldcap could not have written (damage) counts as unknown: 2 s, one record.
            let rate = entry["nominal_rate"]?.doubleValue.flatMap { $0 > 0 && $0 < 1e9 ? $0 : nil } ?? 0
            var gaps = StreamGaps(id: id, rate: rate, thresholdNs: holeThresholdNs(rate: rate))
            if let away = entry["away"] {
                let read = awayEntries(away, stream: id)
                gaps.away = read.entries
                problems += read.problems
            }
            gaps.endedEarlyNs = entry["ended_early_at"]?["monotonic_raw_ns"]?.uint64Value
            guard let drops = entry["drops"]?.objectValue else { continue }
            var documented: [String] = ["drops"]
            func take(_ counted: JSONValue?, name: String? = nil, count key: String = "count") {
                guard let counted else { return }
                if let name { documented.append(name) }
                // Clamped, so that absurd counts add up without overflowing.
                gaps.missingCount += min(1 << 48, max(0, counted[key]?.intValue ?? 0))
                for run in counted["records"]?.arrayValue ?? [] {
                    guard let bounds = run.arrayValue(of: \.uint64Value), bounds.count == 2, bounds[0] <= bounds[1]
                    else { continue }
                    gaps.missingRuns.append(bounds[0]...bounds[1])
                }
            }
            take(.object(drops))
            take(entry["v4l2"]?["kernel_sequence_gaps"], name: "v4l2.kernel_sequence_gaps")
            take(entry["iio"]?["timeline_gaps"], name: "iio.timeline_gaps", count: "samples_missing")
            gaps.missingRuns = DropRuns.merged(gaps.missingRuns, [])
            gaps.documentedIn = documented.joined(separator: " or ")
            streams[id] = gaps
        }
        return (streams, problems)
    }

    /// A stream's `away` entries that can be read, and a problem for each that cannot.
    static func awayEntries(
        _ away: JSONValue, stream id: String
    ) -> (entries: [(leftNs: UInt64, returnedNs: UInt64?)], problems: [Problem]) {
        func problem(_ message: String) -> Problem {
            Problem(file: SessionLayout.sidecarName, message: "stream \(id): \(message)")
        }
        guard let elements = away.arrayValue else {
            return ([], [problem("away is \(kind(of: away)), not an array of the times its device was away")])
        }
        var entries: [(leftNs: UInt64, returnedNs: UInt64?)] = []
        var problems: [Problem] = []
        for (index, element) in elements.enumerated() {
            let name = "away[\(index)]"
            guard element.objectValue != nil else {
                problems.append(problem("\(name) is \(kind(of: element)), not an object"))
                continue
            }
            guard let left = element["left_at"]?["monotonic_raw_ns"]?.uint64Value else {
                problems.append(problem("\(name) has no left_at.monotonic_raw_ns (a non-negative integer)"))
                continue
            }
            var returned: UInt64?
            switch element["returned_at"] {
            case nil, .null?: break
            case let value?:
                guard let ns = value["monotonic_raw_ns"]?.uint64Value else {
                    problems.append(problem("\(name).returned_at is neither null nor a time with monotonic_raw_ns"))
                    continue
                }
                guard ns >= left else {
                    problems.append(
                        problem("\(name) returned (monotonic_raw_ns \(ns)) before it left (monotonic_raw_ns \(left))"))
                    continue
                }
                returned = ns
            }
            if let seconds = element["seconds"] {
                guard let value = seconds.doubleValue, value >= 0 else {
                    problems.append(
                        problem(
                            "\(name).seconds is \(seconds.compactText() ?? "not a number"); a time away is 0 or more"))
                    continue
                }
            }
            entries.append((left, returned))
        }
        return (entries, problems)
    }

    private static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .unsigned, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// A problem for each of `holes` that fieldcap.json does not explain. A hole is explained
    /// when an `away` entry overlaps it, when the stream ended early (`ended_early_at`) before
    /// its end, or by the records missing across it: for a camera, the frames' sequence numbers
    /// (`{id}.frames.ndjson`) skip across it and every skipped one is in `drops` or the device's
    /// gaps; for a sensor, whose files carry no sequence number, where the lost records were
    /// cannot be told, so the stream's documented losses must at least be enough to fill half
    /// the hole beyond the threshold at the nominal rate (each hole uses up what it needs).
    static func holeProblems(
        directory: String, holes: [Hole], streams: [String: StreamGaps], syncMonotonicNs: UInt64?
    ) -> [Problem] {
        var problems: [Problem] = []
        var budget: [String: Int] = streams.mapValues(\.missingCount)
        var sequences: [String: [Int64: UInt64]] = [:]
        var shown: [String: Int] = [:]
        for hole in holes {
            guard let gaps = streams[hole.stream] else { continue }
            let (start, end) = (hole.previousCaptureNs, hole.captureNs)
            if gaps.away.contains(where: { $0.leftNs <= end && ($0.returnedNs ?? .max) >= start }) { continue }
            if let ended = gaps.endedEarlyNs, ended <= end { continue }
            let why: String
            if sequences[hole.stream] == nil {
                // Read once per stream, and only for a stream with a hole nothing else explains.
                let ends = holes.filter { $0.stream == hole.stream }.flatMap {
                    [$0.previousFrameNumber, $0.frameNumber]
                }
                sequences[hole.stream] = frameSequences(
                    path: "\(directory)/\(SessionLayout.frameLogName(hole.stream))", frames: Set(ends))
            }
            if let before = sequences[hole.stream]?[hole.previousFrameNumber],
                let after = sequences[hole.stream]?[hole.frameNumber]
            {
                if after > before &+ 1 && before < .max {
                    let skipped = (before + 1)...(after - 1)
                    if covers(gaps.missingRuns, skipped) { continue }
                    why =
                        "of the sequence numbers \(skipped.lowerBound)-\(skipped.upperBound) missing across it, "
                        + "not all are in \(gaps.documentedIn)"
                } else {
                    why = "its frames' sequence numbers (\(before), \(after)) say no record is missing across it"
                }
            } else {
                let beyond = Double(hole.lengthNs - min(hole.lengthNs, gaps.thresholdNs)) / 1e9
                let needed = max(1, Int(min(1e15, (beyond * gaps.rate / 2).rounded(.up))))
                let left = budget[hole.stream] ?? 0
                if left >= needed {
                    budget[hole.stream] = left - needed
                    continue
                }
                why =
                    "with no sequence numbers for its records (a sensor's files carry none) only the count "
                    + "can be weighed, and the \(left) lost records left in \(gaps.documentedIn) are fewer than "
                    + "the \(needed) it takes"
            }
            // As the SyncField rules cap a file's problems: a damaged stream is not a million lines.
            shown[hole.stream, default: 0] += 1
            if shown[hole.stream]! > maxHolesShown { continue }
            func at(_ ns: UInt64) -> String {
                guard let syncMonotonicNs else { return "capture_ns \(ns)" }
                return
                    "capture_ns \(ns), \(seconds(Double(Int64(bitPattern: ns &- syncMonotonicNs)) / 1e9)) after start"
            }
            problems.append(
                Problem(
                    file: SessionLayout.timestampsName(hole.stream), line: hole.line,
                    message:
                        "stream \(hole.stream) has no record for \(seconds(Double(hole.lengthNs) / 1e9)), between "
                        + "frame_number \(hole.previousFrameNumber) (\(at(start))) and \(hole.frameNumber) "
                        + "(\(at(end))): longer than \(seconds(Double(gaps.thresholdNs) / 1e9)) (the larger of "
                        + "2 s and 50 periods at its nominal rate) and not documented in fieldcap.json, where no "
                        + "away entry or ended_early_at falls in it and \(why); an away entry covering it, or its "
                        + "missing records in \(gaps.documentedIn), would document it"))
        }
        for (stream, count) in shown.sorted(by: { $0.key < $1.key }) where count > maxHolesShown {
            problems.append(
                Problem(
                    file: SessionLayout.timestampsName(stream),
                    message: "\(count - maxHolesShown) more holes fieldcap.json does not document not shown"))
        }
        return problems
    }

    static let maxHolesShown = 20

    /// "3.0 s", "0.125 s".
    private static func seconds(_ value: Double) -> String { "\((value * 1000).rounded() / 1000) s" }

    /// Whether `runs` (sorted, joined where they touch) hold every number of `wanted`.
    static func covers(_ runs: [ClosedRange<UInt64>], _ wanted: ClosedRange<UInt64>) -> Bool {
        runs.contains { $0.lowerBound <= wanted.lowerBound && $0.upperBound >= wanted.upperBound }
    }

    /// The `sequence` of each of `frames` in a camera's frame log (line N holds frame N), read
    /// only as far as the last one wanted; frames whose line is missing or says another
    /// frame_number are left out.
    static func frameSequences(path: String, frames: Set<Int64>) -> [Int64: UInt64] {
        guard let last = frames.max(), last >= 0,
            let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        else { return [:] }
        var found: [Int64: UInt64] = [:]
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var index: Int64 = 0
            var lineStart = 0
            while lineStart < bytes.count && index <= last {
                var lineEnd = lineStart
                while lineEnd < bytes.count && bytes[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
                if frames.contains(index), let line = JSONValue.parse(bytes[lineStart..<lineEnd]),
                    line["frame_number"]?.integerValue == index, let sequence = line["sequence"]?.unsignedValue
                {
                    found[index] = sequence
                }
                index += 1
                lineStart = lineEnd + 1
            }
        }
        return found
    }
}
