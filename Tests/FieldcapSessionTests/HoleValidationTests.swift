import FieldcapSession
import Foundation
import SyncField
import Testing

@Suite("validate: a hole in a stream is documented in fieldcap.json")
struct HoleValidationTests {
    static let syncNs: UInt64 = 8_000_000_000
    static let startNs: UInt64 = 9_000_000_000
    static let period: UInt64 = 33_333_333
    /// Frame 59's and frame 60's times when a 3 s hole lies between them.
    static let beforeHole = startNs + 59 * period
    static let afterHole = beforeHole + 3_000_000_000

    /// `cam` at 30 fps: 120 frames, `hole` ns between frames 59 and 60, each frame's sequence
    /// its number plus `skipped` from frame 60 on.
    static func camera(hole: UInt64 = 3_000_000_000, skipped: UInt64 = 0) -> [(ns: UInt64, sequence: UInt64)] {
        (0..<120).map { frame in
            let ns = startNs + UInt64(frame) * period + (frame >= 60 ? hole - period : 0)
            return (ns, UInt64(frame) + (frame >= 60 ? skipped : 0))
        }
    }

    /// `imu` at 100 Hz for 7 s, `hole` ns between samples 299 and 300.
    static func imu(hole: UInt64 = 10_000_000) -> [UInt64] {
        (0..<700).map { startNs + UInt64($0) * 10_000_000 + ($0 >= 300 ? hole - 10_000_000 : 0) }
    }

    /// A session fieldcap finished: `cam` (stamped, with its frame log) and `imu` as given, and a
    /// fieldcap.json whose stream entries are `cam` and `imu` (each with `drops`, unless
    /// `finished` is false) plus the members given.
    static func makeSession(
        cam: [(ns: UInt64, sequence: UInt64)] = camera(hole: period), imu: [UInt64] = imu(),
        camEntry: [String: Any] = [:], imuEntry: [String: Any] = [:], finished: Bool = true
    ) throws -> String {
        let path = NSTemporaryDirectory() + "/holes-\(UUID().uuidString)"
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        for (frame, stamp) in cam.enumerated() { try session.stamp("cam", frameNumber: frame, captureNs: stamp.ns) }
        for (index, ns) in imu.enumerated() {
            try session.record("imu", frameNumber: index, channels: ["accel_x": Double(index)], captureNs: ns)
        }
        try session.stop()
        let log = cam.enumerated().map { frame, stamp in
            #"{"frame_number":\#(frame),"sequence":\#(stamp.sequence),"capture_ns":\#(stamp.ns)}"# + "\n"
        }
        try log.joined().write(toFile: "\(path)/cam.frames.ndjson", atomically: true, encoding: .utf8)
        let noDrops: [String: Any] = ["count": 0, "records": [Any]()]
        var camStream: [String: Any] = ["id": "cam", "kind": "video", "nominal_rate": 30]
        var imuStream: [String: Any] = ["id": "imu", "kind": "sensor", "nominal_rate": 100]
        if finished {
            camStream["drops"] = noDrops
            imuStream["drops"] = noDrops
        }
        camStream.merge(camEntry) { $1 }
        imuStream.merge(imuEntry) { $1 }
        let sidecar: [String: Any] = [
            "host_id": "rig_01", "state": finished ? "complete" : "recording", "streams": [camStream, imuStream],
            "sync_point": ["monotonic_ns": syncNs, "wall_clock_ns": 1_700_000_000_000_000_000],
        ]
        try JSONSerialization.data(withJSONObject: sidecar).write(to: URL(fileURLWithPath: "\(path)/fieldcap.json"))
        return path
    }

    static func instant(_ ns: UInt64) -> [String: Any] {
        ["monotonic_raw_ns": ns, "seconds_after_start": Double(ns - syncNs) / 1e9]
    }

    /// An `away` entry as the recorder writes it.
    static func away(left: UInt64, returned: UInt64?) -> [String: Any] {
        [
            "left_at": instant(left), "reason": "VIDIOC_DQBUF: No such device (errno 19)",
            "returned_at": returned.map { instant($0) as Any } ?? NSNull(),
            "seconds": Double(Int64(bitPattern: (returned ?? left) &- left)) / 1e9, "records_at_nominal_rate": 0,
        ]
    }

    static func problems(_ path: String) -> [String] {
        SessionValidator.validateWithVideos(directory: path).problems.map(\.description)
    }

    @Test("a 3 s hole in a camera's frames that fieldcap.json does not document is a problem, with the numbers")
    func undocumentedHole() throws {
        let path = try Self.makeSession(cam: Self.camera())
        defer { try? FileManager.default.removeItem(atPath: path) }
        // The SyncField rules alone have nothing against it.
        #expect(SessionValidator.validate(directory: path).isValid)
        #expect(
            Self.problems(path) == [
                "cam.timestamps.jsonl:61: stream cam has no record for 3.0 s, between frame_number 59 "
                    + "(capture_ns \(Self.beforeHole), 2.967 s after start) and 60 (capture_ns \(Self.afterHole), "
                    + "5.967 s after start): longer than 2.0 s (the larger of 2 s and 50 periods at its nominal "
                    + "rate) and not documented in fieldcap.json, where no away entry or ended_early_at falls in "
                    + "it and its frames' sequence numbers (59, 60) say no record is missing across it; an away "
                    + "entry covering it, or its missing records in drops, would document it"
            ])
    }

    @Test("the same hole is valid with an away entry overlapping it, returned or not within the session")
    func awayCoversHole() throws {
        for returned in [Self.afterHole - 400_000_000, nil] {
            let away = Self.away(left: Self.beforeHole + 80_000_000, returned: returned)
            let path = try Self.makeSession(cam: Self.camera(), camEntry: ["away": [away]])
            defer { try? FileManager.default.removeItem(atPath: path) }
            #expect(Self.problems(path) == [])
        }
        // An away entry elsewhere in the session explains nothing here.
        let elsewhere = Self.away(left: Self.startNs + 100_000_000, returned: Self.startNs + 900_000_000)
        let path = try Self.makeSession(cam: Self.camera(), camEntry: ["away": [elsewhere]])
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Self.problems(path).count == 1)
    }

    @Test(
        "a hole whose skipped sequence numbers are all in drops or the kernel's gaps is valid; one partly there is not")
    func dropsExplainHole() throws {
        let cam = Self.camera(skipped: 90)
        let runs: [[Int]] = [[60, 149]]
        for entry: [String: Any] in [
            ["drops": ["count": 90, "records": runs]],
            ["v4l2": ["kernel_sequence_gaps": ["count": 90, "records": runs]]],
            [
                "drops": ["count": 40, "records": [[60, 99]]],
                "v4l2": ["kernel_sequence_gaps": ["records": [[100, 149]]]],
            ],
        ] {
            let path = try Self.makeSession(cam: cam, camEntry: entry)
            defer { try? FileManager.default.removeItem(atPath: path) }
            #expect(Self.problems(path) == [], "\(entry)")
        }
        let path = try Self.makeSession(cam: cam, camEntry: ["drops": ["count": 41, "records": [[60, 100]]]])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let problems = Self.problems(path)
        #expect(problems.count == 1)
        #expect(
            problems.first?.contains("of the sequence numbers 60-149 missing across it, not all are in drops") == true,
            "\(problems)")
    }

    @Test("a hole where the stream ended early (ended_early_at) is valid")
    func endedEarly() throws {
        let path = try Self.makeSession(
            cam: Self.camera(), camEntry: ["ended_early": "gone", "ended_early_at": Self.instant(Self.beforeHole + 1)])
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Self.problems(path) == [])
    }

    @Test("jitter, a pause under the threshold and a camera that starts seconds after the IMU are valid")
    func normalTiming() throws {
        // Frames up to 25 ms off their slot, a 1.9 s pause, and the first frame 4 s in.
        let cam = (0..<200).map { frame -> (ns: UInt64, sequence: UInt64) in
            let jitter = UInt64((frame * 7_919) % 25) * 1_000_000
            let ns = Self.startNs + 4_000_000_000 + UInt64(frame) * Self.period + jitter
            return (ns + (frame >= 100 ? 1_900_000_000 : 0), UInt64(frame))
        }
        let path = try Self.makeSession(cam: cam, imu: Self.imu(hole: 1_900_000_000))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Self.problems(path) == [])
    }

    @Test("a sensor's hole, whose files carry no sequence numbers, is valid when its documented losses could fill it")
    func sensorHole() throws {
        let imu = Self.imu(hole: 3_000_000_000)
        let gaps: [String: Any] = [
            "iio": ["timeline_gaps": ["events": 1, "samples_missing": 299, "records": [[300, 598]]]]
        ]
        let documented = try Self.makeSession(imu: imu, imuEntry: gaps)
        defer { try? FileManager.default.removeItem(atPath: documented) }
        #expect(Self.problems(documented) == [])
        // One lost record is not a 3 s hole.
        let few = try Self.makeSession(imu: imu, imuEntry: ["drops": ["count": 1, "records": [[10, 10]]]])
        defer { try? FileManager.default.removeItem(atPath: few) }
        let problems = Self.problems(few)
        #expect(problems.count == 1)
        #expect(
            problems.first?.hasPrefix("imu.timestamps.jsonl:301: stream imu has no record for 3.0 s") == true
                && problems.first?.contains("the 1 lost records left in drops are fewer than the 50 it takes") == true,
            "\(problems)")
    }

    @Test("a session whose fieldcap.json was written at start (no drops) has its holes left unjudged")
    func unfinishedSidecar() throws {
        let path = try Self.makeSession(cam: Self.camera(), finished: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(Self.problems(path) == [])
    }

    @Test("a malformed away entry is a problem: not an object, back before it left, negative seconds, not an array")
    func malformedAway() throws {
        let left = Self.startNs + 1_000_000_000
        var negative = Self.away(left: left, returned: left + 500_000_000)
        negative["seconds"] = -0.5
        let entries: [Any] = [5, Self.away(left: left, returned: left - 1), negative, ["reason": "gone"]]
        let path = try Self.makeSession(camEntry: ["away": entries], imuEntry: ["away": "yes"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(
            Self.problems(path) == [
                "fieldcap.json: stream cam: away[0] is a number, not an object",
                "fieldcap.json: stream cam: away[1] returned (monotonic_raw_ns \(left - 1)) before it left "
                    + "(monotonic_raw_ns \(left))",
                "fieldcap.json: stream cam: away[2].seconds is -0.5; a time away is 0 or more",
                "fieldcap.json: stream cam: away[3] has no left_at.monotonic_raw_ns (a non-negative integer)",
                "fieldcap.json: stream imu: away is a string, not an array of the times its device was away",
            ])
    }
}
