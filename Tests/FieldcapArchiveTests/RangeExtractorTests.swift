import FieldcapArchive
import FieldcapCore
import FieldcapMedia
import FieldcapSegments
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@Suite("Extracting a time range")
struct RangeExtractorTests {
    /// The wall-clock time of a segment's start, from the index.
    static func start(_ segment: RecordingIndex.Segment) throws -> UInt64 {
        try #require(UTCTime.parse(segment.startUtc))
    }

    @Test("a range across three segments: valid, exactly the lines in range, the frames byte for byte")
    func acrossThreeSegments() throws {
        let recorded = try RecordingFixture.recording()
        let index = try #require(RecordingIndex.read(directory: recorded.directory))
        let segments = index.presentSegments
        try #require(segments.count >= 4)
        // From the middle of the second segment to the middle of the fourth.
        let fromNs = try Self.start(segments[1]) + 500_000_000
        let toNs = try Self.start(segments[3]) + 500_000_000
        let out = RecordingFixture.temporary("extract")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try RangeExtractor.extract(
            RangeExtractor.Request(source: recorded.directory, fromNs: fromNs, toNs: toNs, out: out))
        #expect(outcome.report.isValid, "\(outcome.report.problems)")
        #expect(outcome.parts == [segments[1], segments[2], segments[3]].map(\.directory))

        let manifest =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/manifest.json")))
            as! [String: Any]
        let streams = manifest["streams"] as! [String: [String: Any]]
        for id in ["cam0", "cam1", "imu"] {
            // What should be there, counted here from the segments' own files: each line's
            // capture_ns placed on the wall clock through its segment's sync_point.json.
            var expected: [[String: Any]] = []
            var expectedFrames: [[UInt8]] = []
            for segment in segments {
                let directory = "\(recorded.directory)/\(segment.directory)"
                let sync = try RecordingFixture.syncPoint(directory)
                let lines = try RecordingFixture.lines("\(directory)/\(id).timestamps.jsonl")
                let inRange = lines.indices.filter { line in
                    let capture = (lines[line]["capture_ns"] as! NSNumber).int64Value
                    let wall = capture - sync.monotonic + sync.wall
                    return wall >= Int64(fromNs) && wall < Int64(toNs)
                }
                expected += inRange.map { lines[$0] }
                if id != "imu", let first = inRange.first, let last = inRange.last {
                    var frame = 0
                    try MatroskaFrames.forEach(in: "\(directory)/\(id).mkv") { bytes, _ in
                        defer { frame += 1 }
                        if frame >= first && frame <= last { expectedFrames.append(Array(bytes)) }
                        return frame < last
                    }
                }
            }
            #expect(!expected.isEmpty)
            let written = try RecordingFixture.lines("\(out)/\(id).timestamps.jsonl")
            #expect(written.count == expected.count, "\(id)")
            #expect(streams[id]?["frame_count"] as? Int == expected.count, "\(id)")
            for (line, (got, want)) in zip(written, expected).enumerated() {
                #expect(got["capture_ns"] as? NSNumber == want["capture_ns"] as? NSNumber)
                #expect(got["frame_number"] as? Int == line)
                #expect(got["uncertainty_ns"] as? NSNumber == want["uncertainty_ns"] as? NSNumber)
            }
            if id == "imu" {
                let sensor = try RecordingFixture.lines("\(out)/imu.jsonl")
                #expect(sensor.count == expected.count)
                #expect(
                    zip(sensor, written).allSatisfy { $0["capture_ns"] as? NSNumber == $1["capture_ns"] as? NSNumber })
            } else {
                var frames: [[UInt8]] = []
                try MatroskaFrames.forEach(in: "\(out)/\(id).mkv") { bytes, _ in
                    frames.append(Array(bytes))
                    return true
                }
                #expect(frames.count == expectedFrames.count, "\(id)")
                // The synthetic pattern moves every frame: a frame off by one would differ.
                #expect(expectedFrames.count > 2 && expectedFrames[0] != expectedFrames[1])
                #expect(frames == expectedFrames, "\(id): the frames are the recording's, byte for byte")
                let probe = try runTool(
                    "ffprobe",
                    [
                        "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of",
                        "default=noprint_wrappers=1", "\(out)/\(id).mkv",
                    ]
                ).output
                #expect(probe.contains("nb_read_frames=\(expected.count)"), "\(id): \(probe)")
            }
        }
        let sidecar = try #require(Sidecar.Contents(layout: SessionLayout(directory: out)))
        #expect(sidecar.state == "complete")
        #expect(sidecar.stopReason == "extract")
    }

    @Test("the extract lists as a session and recovers as one (nothing to do)")
    func extractIsASession() throws {
        let recorded = try RecordingFixture.recording()
        let index = try #require(RecordingIndex.read(directory: recorded.directory))
        let first = try Self.start(index.presentSegments[0])
        let root = RecordingFixture.temporary("extract-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        _ = try RangeExtractor.extract(
            RangeExtractor.Request(
                source: recorded.root, fromNs: first + 200_000_000, toNs: first + 700_000_000, out: "\(root)/clip"))
        let entries = try SessionCatalog.entries(root: root)
        #expect(entries.count == 1)
        #expect(entries.first?.kind == .session && entries.first?.state == .complete)
        let duration = try #require(entries.first?.durationSeconds)
        #expect(duration > 0.3 && duration < 0.5, "\(duration)")
        guard case .alreadyValid = try SessionFinisher.recover(directory: "\(root)/clip", say: { _ in }) else {
            Issue.record("the extract should already be valid")
            return
        }
    }

    @Test("bad ranges and sources: one clear error, nothing written")
    func refusals() throws {
        let recorded = try RecordingFixture.recording()
        let index = try #require(RecordingIndex.read(directory: recorded.directory))
        let start = try Self.start(index.presentSegments[0])
        let out = RecordingFixture.temporary("extract-refused")
        func refusal(_ source: String, _ fromNs: UInt64, _ toNs: UInt64) -> String? {
            do {
                _ = try RangeExtractor.extract(
                    RangeExtractor.Request(source: source, fromNs: fromNs, toNs: toNs, out: out))
                return nil
            } catch {
                return "\(error)"
            }
        }
        let backwards = refusal(recorded.directory, start + 2_000_000_000, start + 1_000_000_000)
        #expect(backwards?.contains("--to must be after --from") == true, "\(backwards ?? "no error")")
        let hourLater = start + 3_600_000_000_000
        let outside = refusal(recorded.directory, hourLater, hourLater + 1_000_000_000)
        #expect(outside?.contains("is outside the recording") == true && outside?.contains("which spans") == true)
        #expect(!FileManager.default.fileExists(atPath: out))

        let foreign = RecordingFixture.temporary("foreign")
        defer { try? FileManager.default.removeItem(atPath: foreign) }
        try FileManager.default.createDirectory(atPath: "\(foreign)/photos", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(foreign)/photos/a.jpg"))
        let notOurs = refusal(foreign, start, start + 1_000_000_000)
        #expect(notOurs?.contains("holds no fieldcap session or recording") == true, "\(notOurs ?? "no error")")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(foreign)/photos") == ["a.jpg"])

        // An existing --out is never written into.
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: out) }
        let exists = refusal(recorded.directory, start, start + 1_000_000_000)
        #expect(exists?.contains("already exists") == true, "\(exists ?? "no error")")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
    }

    /// `file` with its last line repeated, its `capture_ns` replaced by `captureNs`; for a
    /// timestamps file, the manifest counts the line.
    static func appendLine(capturedAt captureNs: String, to file: String) throws {
        let text = try String(contentsOfFile: file, encoding: .utf8)
        let last = try #require(text.split(separator: "\n").last)
        let rest = try #require(last.firstIndex(of: ","))
        let line = #"{"capture_ns":"# + captureNs + last[rest...] + "\n"
        try Data((text + line).utf8).write(to: URL(fileURLWithPath: file))
        let name = URL(fileURLWithPath: file).lastPathComponent
        guard name.hasSuffix(".timestamps.jsonl") else { return }
        let manifestPath = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(
            "manifest.json")
        var manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: manifestPath)) as? [String: Any])
        var streams = try #require(manifest["streams"] as? [String: Any])
        let id = String(name.dropLast(".timestamps.jsonl".count))
        var stream = try #require(streams[id] as? [String: Any])
        stream["frame_count"] = try #require(stream["frame_count"] as? Int) + 1
        streams[id] = stream
        manifest["streams"] = streams
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestPath)
    }

    @Test("a stream whose timestamp lines were emptied or cut is refused, naming the file, not extracted shorter (#42)")
    func linesMissing() throws {
        let copied = try RecordingFixture.copy()
        defer { try? FileManager.default.removeItem(atPath: copied.root) }
        let index = try #require(RecordingIndex.read(directory: copied.directory))
        let segment = index.presentSegments[1]
        let session = "\(copied.directory)/\(segment.directory)"
        let start = try Self.start(segment)
        try Data().write(to: URL(fileURLWithPath: "\(session)/imu.timestamps.jsonl"))
        let out = RecordingFixture.temporary("extract-emptied")
        defer { try? FileManager.default.removeItem(atPath: out) }
        #expect {
            try RangeExtractor.extract(
                RangeExtractor.Request(source: session, fromNs: start, toNs: start + 1_000_000_000, out: out))
        } throws: { error in
            "\(error)".contains("imu.timestamps.jsonl holds 0 lines, but manifest.json counts")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("capture_ns at Int64.max, at UInt64.max, an index past any clock: an extract or one clear error, no trap")
    func absurdCaptureTimes() throws {
        let copied = try RecordingFixture.copy()
        defer { try? FileManager.default.removeItem(atPath: copied.root) }
        var index = try #require(RecordingIndex.read(directory: copied.directory))
        let segment = index.presentSegments[1]
        let session = "\(copied.directory)/\(segment.directory)"
        let start = try Self.start(segment)
        func extract(_ source: String, _ fromNs: UInt64, _ toNs: UInt64) -> Result<RangeExtractor.Outcome, Error> {
            let out = RecordingFixture.temporary("extract-absurd")
            defer { try? FileManager.default.removeItem(atPath: out) }
            return Result {
                try RangeExtractor.extract(RangeExtractor.Request(source: source, fromNs: fromNs, toNs: toNs, out: out))
            }
        }

        // The last IMU sample at 2^63 - 1 ns (what a damaged file may hold; validate now calls it
        // a jump past the stop): it sits in the year 2318 on the wall clock, so a range of the
        // real samples still extracts them, and a range reaching it ends without a trap either way.
        try Self.appendLine(capturedAt: "9223372036854775807", to: "\(session)/imu.timestamps.jsonl")
        try Self.appendLine(capturedAt: "9223372036854775807", to: "\(session)/imu.jsonl")
        let inside = try extract(session, start + 200_000_000, start + 700_000_000).get()
        #expect(inside.report.isValid, "\(inside.report.problems)")
        #expect(inside.records.first { $0.id == "imu" }?.count ?? 0 > 50)
        let year2500 = try #require(UTCTime.parse("2500-01-01T00:00:00Z"))
        if case .failure(let error) = extract(session, start, year2500) {
            #expect(error is RangeExtractor.Failure, "\(error)")
        }

        // Past what the wall clock can hold: refused, naming the session.
        try Self.appendLine(capturedAt: "18446744073709551615", to: "\(session)/imu.timestamps.jsonl")
        try Self.appendLine(capturedAt: "18446744073709551615", to: "\(session)/imu.jsonl")
        let tooFar = extract(session, start, start + 1_000_000_000)
        guard case .failure(let error) = tooFar else {
            Issue.record("a capture_ns of 2^64 - 1 should be refused")
            return
        }
        #expect("\(error)".contains("capture_ns 18446744073709551615 is too far from the sync point"), "\(error)")

        // An index whose last_capture_ns is past its segment's start by more than a UInt64.
        index.segments[1].streams?["imu"]?.lastCaptureNs = .max
        index.segments[1].startMonotonicRawNs = 0
        let lastPresent = try #require(index.segments.lastIndex { $0.state != .deleted })
        index.segments[lastPresent].streams?["imu"]?.lastCaptureNs = .max
        index.segments[lastPresent].endMonotonicRawNs = .max
        index.segments[lastPresent].startMonotonicRawNs = 0
        try index.write(directory: copied.directory)
        let first = try Self.start(index.presentSegments[0])
        guard case .failure(let indexError) = extract(copied.directory, first, first + 1_000_000_000) else {
            Issue.record("an index past the wall clock should be refused")
            return
        }
        #expect("\(indexError)".contains("recording.json: segment"), "\(indexError)")
        // The listing reads the same index: the last segment's end falls back to its end_utc.
        let listed = SessionCatalog.entry(directory: copied.directory, name: "r")
        #expect(listed.endNs == UTCTime.parse(index.segments[lastPresent].endUtc))
    }

    @Test("UTC times as the command line takes them")
    func parsesTimes() {
        #expect(UTCTime.parse("1970-01-01T00:00:01Z") == 1_000_000_000)
        #expect(UTCTime.parse("2026-11-23T14:02:00Z") == 1_795_442_520_000_000_000)
        #expect(UTCTime.parse("2026-11-23T14:02:00.25Z") == 1_795_442_520_250_000_000)
        #expect(UTCTime.parse("2026-11-23T15:02:00+01:00") == 1_795_442_520_000_000_000)
        #expect(UTCTime.parse("2026-11-23 14:02:00Z") == 1_795_442_520_000_000_000)
        #expect(UTCTime.parse("2026-11-23T14:02:00") == nil, "a time without its zone is refused")
        #expect(UTCTime.parse("2026-02-30T00:00:00Z") == nil)
        #expect(UTCTime.parse("yesterday") == nil)
        #expect(UTCTime.parse("2026-11-23T14:02:00.Z") == nil)
        #expect(UTCTime.parse("2026-11-23T14:02:00+99:99") == nil, "not a UTC offset")
        #expect(UTCTime.parse("2026-11-23T14:02:00+23:60") == nil)
        #expect(UTCTime.parse("2026-11-23T14:02:00-23:59") == 1_795_528_860_000_000_000)
        // Past 2554 nanoseconds since the epoch no longer fit a UInt64: no time, not a trap.
        #expect(UTCTime.parse("2554-07-21T23:34:33Z") == 18_446_744_073_000_000_000)
        #expect(UTCTime.parse("2554-07-21T23:34:34Z") == nil)
        #expect(UTCTime.parse("9999-12-31T23:59:59.999Z") == nil)
    }
}
