import Foundation
import SyncField
import Testing

@testable import FieldcapCore
@testable import fieldcap

/// A source that reports what a test says: a device like the ones in the kernel rig, without one.
final class ReportingSource: CaptureSource, @unchecked Sendable {
    let descriptor: StreamDescriptor
    let report: SourceReport
    let deviceGaps: DropCounter?

    init(_ descriptor: StreamDescriptor, report: SourceReport, deviceGaps: Int? = nil) {
        self.descriptor = descriptor
        self.report = report
        self.deviceGaps = deviceGaps.map { gaps in
            let counter = DropCounter()
            if gaps > 0 { counter.record(from: 100, count: gaps) }
            return counter
        }
    }

    func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {}
}

@Suite("what a recording says at start and at the end")
struct StartAndEndLinesTests {
    static let second: UInt64 = 1_000_000_000

    static func warning(
        _ kind: StreamDescriptor.Kind = .video, nominal: Double = 30, written: Int, dropped: Int = 0, gaps: Int? = nil,
        spanSeconds: Double?, elapsed: Double, endedEarly: Bool = false
    ) -> String? {
        let span = spanSeconds.map { 5 * second...(5 * second + UInt64($0 * 1e9)) }
        return RateWarning.warning(
            kind: kind, nominal: nominal, written: written, dropped: dropped, deviceGaps: gaps, capturedSpanNs: span,
            elapsed: elapsed, endedEarly: endedEarly)
    }

    @Test("a rate within 80-120% of the nominal one gives no warning; below or above it does, with the measured rate")
    func rateBounds() throws {
        // 30 fps for 10 s: 301 frames over 10 s from the first to the last.
        #expect(Self.warning(written: 301, spanSeconds: 10, elapsed: 10.2) == nil)
        #expect(Self.warning(written: 241, spanSeconds: 10, elapsed: 10.2) == nil)  // 24.0 fps: 80%, on the bound
        #expect(Self.warning(written: 361, spanSeconds: 10, elapsed: 10.2) == nil)  // 36.0 fps: 120%
        let low = try #require(Self.warning(written: 211, spanSeconds: 10, elapsed: 10.2))
        #expect(
            low.hasPrefix("recorded at 21.0 fps, 70% of its nominal 30 fps (from its first frame to its last): "),
            "\(low)")
        #expect(low.contains("automatic exposure") && low.contains("ctrl.NAME=VALUE"), "\(low)")
        let high = try #require(Self.warning(written: 451, spanSeconds: 10, elapsed: 10.2))
        #expect(high.hasPrefix("recorded at 45.0 fps, 150% of its nominal 30 fps"), "\(high)")
        #expect(high.contains("more than the rate it reports"), "\(high)")
        let imu = try #require(
            Self.warning(.sensor, nominal: 200, written: 1001, gaps: 900, spanSeconds: 10, elapsed: 10))
        #expect(
            imu
                == """
                recorded at 100.0 Hz, 50% of its nominal 200 Hz (from its \
                first sample to its last): the device skipped 900 samples
                """
        )
    }

    @Test("a slow start is not a low rate: the rate is measured from the first record to the last")
    func slowStart() throws {
        // The camera's first frame came 3 s into a 10 s run: 30 fps while it delivered.
        #expect(Self.warning(written: 211, spanSeconds: 7, elapsed: 10) == nil)
        // Its first frame came 9.5 s in: too short a span to judge, so over the whole run.
        let late = try #require(Self.warning(written: 15, spanSeconds: 0.47, elapsed: 10))
        #expect(late.hasPrefix("recorded at 1.5 fps, 5% of its nominal 30 fps (over the whole 10.0 s run)"), "\(late)")
        // Nothing at all in a long run.
        #expect(Self.warning(written: 0, spanSeconds: nil, elapsed: 5)?.hasPrefix("recorded at 0.0 fps, 0%") == true)
    }

    @Test("no rate warning for a short run, a stream that ended early, or too few records to judge")
    func notJudged() {
        #expect(Self.warning(written: 10, spanSeconds: 1.5, elapsed: 1.9) == nil)
        #expect(Self.warning(written: 20, spanSeconds: 2, elapsed: 5, endedEarly: true) == nil)
        #expect(Self.warning(.sensor, nominal: 2, written: 2, spanSeconds: 2, elapsed: 4.5) == nil)  // 9 expected
        #expect(Self.warning(.sensor, nominal: 2, written: 2, spanSeconds: 2, elapsed: 5) != nil)  // 10 expected
        #expect(Self.warning(nominal: 0, written: 0, spanSeconds: nil, elapsed: 10) == nil)
    }

    @Test("drops and the device's own gaps are named as the causes of a low rate")
    func causes() throws {
        let text = try #require(Self.warning(written: 151, dropped: 120, gaps: 30, spanSeconds: 10, elapsed: 10))
        #expect(
            text.hasSuffix(
                ": fieldcap dropped 120 frames: the disk or the CPU did not keep up; the device skipped 30 frames"),
            "\(text)")
        #expect(!text.contains("automatic exposure"))
    }

    static func vivid(timeSource: String = "kernel, mapped", warnings: [String] = []) -> ReportingSource {
        ReportingSource(
            StreamDescriptor(id: "cam0", kind: .video, nominalRate: 30, device: "/dev/video0"),
            report: SourceReport(
                kind: "v4l2", granted: ["device": "/dev/video0", "rate": 30.0, "rate_source": "standard"],
                summary: "vivid (vivid, platform:vivid-000), YUYV 640x480, 30 fps (fieldcap's default; fps= to change)",
                timeSource: timeSource, timestamps: [:], warnings: warnings),
            deviceGaps: 0)
    }

    static let imu = ReportingSource(
        StreamDescriptor(id: "imu_left", kind: .sensor, channels: ["accel_x"], nominalRate: 100, device: "dummy0"),
        report: SourceReport(
            kind: "iio",
            granted: ["device": "dummy0", "trigger": nil, "channels": [["name": "accel_x", "unit": "m/s²"]]],
            summary: "dummy0 (iio:device0), accel_x (m/s²), 100 Hz", timeSource: "kernel, RAW", timestamps: [:]))

    @Test("the start: one line per stream, ids and devices in columns, each with what it was granted")
    func header() {
        let reporter = StatusReporter(
            directory: "/srv/s1", sources: [Self.vivid(), Self.imu], quiet: false, json: false)
        #expect(
            reporter.header == """
                recording 2 streams into /srv/s1
                  cam0      /dev/video0  vivid (vivid, platform:vivid-000), YUYV 640x480, 30 fps (fieldcap's default; \
                fps= to change)
                  imu_left  dummy0       dummy0 (iio:device0), accel_x (m/s²), 100 Hz
                  Ctrl-C stops

                """)
    }

    /// A line as `--json` prints it, read back by Foundation.
    func printed(_ line: [String: JSONValue]) throws -> [String: Any] {
        let text = try #require(JSONValue.object(line).compactText(escapingSlashes: false))
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("--json's start line: each stream's id, kind, device, what it was granted, its summary and time source")
    func startLine() throws {
        let reporter = StatusReporter(
            directory: "/srv/s1", sources: [Self.vivid(), Self.imu], quiet: false, json: true)
        // As it is printed: a null in `granted` must survive it.
        let line = try printed(reporter.startLine)
        #expect(line["event"] as? String == "start")
        #expect(line["directory"] as? String == "/srv/s1")
        let streams = try #require(line["streams"] as? [[String: Any]])
        #expect(streams.map { $0["id"] as? String } == ["cam0", "imu_left"])
        #expect(streams.map { $0["kind"] as? String } == ["video", "sensor"])
        #expect(streams.map { $0["device"] as? String } == ["/dev/video0", "dummy0"])
        #expect(streams.map { $0["time_source"] as? String } == ["kernel, mapped", "kernel, RAW"])
        #expect(streams[0]["summary"] as? String == Self.vivid().report.summary)
        let granted = try #require(streams[1]["granted"] as? [String: Any])
        #expect(granted["trigger"] is NSNull)
        #expect((granted["channels"] as? [[String: Any]])?.first?["unit"] as? String == "m/s²")
        #expect((streams[0]["granted"] as? [String: Any])?["rate_source"] as? String == "standard")
    }

    @Test("the end: a warning line per reported warning and for a far rate, on stderr and in --json's stop line")
    func endWarnings() throws {
        let camera = Self.vivid(
            timeSource: "kernel, mapped (31 at dequeue)",
            warnings: ["31 of 31 frames were stamped at dequeue, not with the kernel's time (31: ahead of the dequeue)"]
        )
        let reporter = StatusReporter(directory: "/srv/s1", sources: [camera, Self.imu], quiet: false, json: true)
        let summary = [
            Recorder.StreamSummary(
                id: "cam0", written: 31, dropped: 0, capturedSpanNs: Self.second...(7 * Self.second)),
            Recorder.StreamSummary(
                id: "imu_left", written: 600, dropped: 0, capturedSpanNs: Self.second...(7 * Self.second)),
        ]
        let warnings = reporter.warnings(summary, elapsed: 6.2)
        #expect(warnings[0].count == 2)
        #expect(warnings[0][0] == camera.report.warnings[0])
        #expect(warnings[0][1].hasPrefix("recorded at 5.0 fps, 17% of its nominal 30 fps"), "\(warnings[0])")
        #expect(warnings[1].isEmpty)  // 99.8 Hz

        let text = reporter.summaryText(summary, warnings: warnings, elapsed: 6.2, reason: "duration")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("warning: ") } == warnings[0].map { "warning: cam0: \($0)" })
        #expect(lines.last == "check it with: fieldcap validate /srv/s1")

        let stop = try printed(reporter.stopLine(summary, warnings: warnings, elapsed: 6.2, reason: "duration"))
        #expect(stop["event"] as? String == "stop")
        #expect(stop["reason"] as? String == "duration")
        #expect(stop["elapsed_s"] as? Double == 6.2)
        let streams = try #require(stop["streams"] as? [[String: Any]])
        #expect(streams[0]["warnings"] as? [String] == warnings[0])
        #expect(streams[1]["warnings"] as? [String] == [])
        #expect(streams[0]["time_source"] as? String == "kernel, mapped (31 at dequeue)")
        #expect(streams[0]["written"] as? Int == 31 && streams[0]["dropped"] as? Int == 0)
        #expect(streams[0]["device_gaps"] as? Int == 0 && streams[1]["device_gaps"] == nil)
    }

    @Test("a stream that ended early says so in the stop line, and gets no rate warning")
    func endedEarly() throws {
        let reporter = StatusReporter(directory: "/srv/s1", sources: [Self.vivid()], quiet: false, json: true)
        var stream = Recorder.StreamSummary(
            id: "cam0", written: 12, dropped: 0, capturedSpanNs: Self.second...(2 * Self.second))
        stream.captureError = "VIDIOC_DQBUF on /dev/video0: No such device (errno 19)"
        let warnings = reporter.warnings([stream], elapsed: 10)
        #expect(warnings == [[]])
        let line = reporter.stopLine([stream], warnings: warnings, elapsed: 10, reason: "duration")
        #expect(line["streams"]?.arrayValue?.first?["ended_early"]?.stringValue == stream.captureError)
    }
}
