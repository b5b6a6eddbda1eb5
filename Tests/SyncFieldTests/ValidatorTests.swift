import Foundation
import Testing

@testable import SyncField

@Suite("Session validator")
struct ValidatorTests {
    /// A valid two-stream session: a linked camera and a recorded IMU.
    static func makeSession() throws -> TemporaryDirectory {
        let directory = TemporaryDirectory("validator")
        let session = SyncSession(hostId: "rig_01", outputDir: directory.path)
        try session.start()
        for frame in 0..<5 {
            try session.stamp("cam", frameNumber: frame, captureNs: UInt64(1000 + frame * 10))
            try session.record(
                "imu", frameNumber: frame,
                channels: ["accel_x": 0.5 * Double(frame), "g": [1, 2], "n": ["b": 1.5, "a": Float(0.1)]],
                captureNs: UInt64(1001 + frame * 10))
        }
        session.link("cam", path: "/data/cam.mp4")
        try session.stop()
        return directory
    }

    /// Replaces `old` with `new` in one file (the first occurrence on line `line`, or anywhere).
    static func edit(_ directory: TemporaryDirectory, _ name: String, line: Int? = nil, _ old: String, _ new: String) {
        var text = directory.read(name)!
        if let line {
            var lines = text.components(separatedBy: "\n")
            let index = lines[line - 1].range(of: old)!
            lines[line - 1].replaceSubrange(index, with: new)
            text = lines.joined(separator: "\n")
        } else {
            text = text.replacingOccurrences(of: old, with: new)
        }
        try! text.write(toFile: directory.file(name), atomically: true, encoding: .utf8)
    }

    @Test("a session written by SyncSession is valid")
    func validSession() throws {
        let directory = try Self.makeSession()
        let report = SessionValidator.validate(directory: directory.path)
        #expect(report.problems == [])
        #expect(report.streamCount == 2)
        #expect(report.lineCount == 10)
        #expect(report.warnings.isEmpty)
    }

    /// One broken rule each, with the file, line and words the report must name.
    struct Breakage: CustomTestStringConvertible, Sendable {
        var name: String
        var file: String
        var line: Int?
        var expect: String
        var apply: @Sendable (TemporaryDirectory) -> Void
        var testDescription: String { name }
    }

    static let breakages: [Breakage] = [
        Breakage(name: "not JSON", file: "cam.timestamps.jsonl", line: 2, expect: "not valid JSON") {
            edit($0, "cam.timestamps.jsonl", line: 2, "{", "[")
        },
        Breakage(name: "truncated last line", file: "cam.timestamps.jsonl", line: 5, expect: "incomplete") {
            let path = $0.file("cam.timestamps.jsonl")
            let data = FileManager.default.contents(atPath: path)!
            try! data.dropLast(9).write(to: URL(fileURLWithPath: path))
        },
        Breakage(name: "empty line", file: "cam.timestamps.jsonl", line: 3, expect: "empty") {
            edit($0, "cam.timestamps.jsonl", line: 3, "{", "\n{")
        },
        Breakage(name: "missing key", file: "cam.timestamps.jsonl", line: 1, expect: "lacks uncertainty_ns") {
            edit($0, "cam.timestamps.jsonl", line: 1, #","uncertainty_ns":5000000"#, "")
        },
        Breakage(name: "extra key", file: "imu.timestamps.jsonl", line: 4, expect: "unexpected keys extra") {
            edit($0, "imu.timestamps.jsonl", line: 4, "}", #","extra":1}"#)
        },
        Breakage(name: "keys out of order", file: "cam.timestamps.jsonl", line: 2, expect: "order") {
            edit(
                $0, "cam.timestamps.jsonl", line: 2, #""clock_domain":"rig_01","clock_source":"host_monotonic""#,
                #""clock_source":"host_monotonic","clock_domain":"rig_01""#)
        },
        Breakage(name: "capture_ns not an integer", file: "cam.timestamps.jsonl", line: 1, expect: "capture_ns must be")
        {
            edit($0, "cam.timestamps.jsonl", line: 1, #""capture_ns":1000"#, #""capture_ns":"1000""#)
        },
        Breakage(name: "negative capture_ns", file: "cam.timestamps.jsonl", line: 1, expect: "capture_ns must be") {
            edit($0, "cam.timestamps.jsonl", line: 1, #""capture_ns":1000"#, #""capture_ns":-1000"#)
        },
        Breakage(name: "capture_ns decreasing", file: "cam.timestamps.jsonl", line: 3, expect: "never decrease") {
            edit($0, "cam.timestamps.jsonl", line: 3, #""capture_ns":1020"#, #""capture_ns":1005"#)
        },
        Breakage(
            name: "frame_number not an integer", file: "cam.timestamps.jsonl", line: 2, expect: "frame_number must be"
        ) {
            edit($0, "cam.timestamps.jsonl", line: 2, #""frame_number":1"#, #""frame_number":1.5"#)
        },
        Breakage(
            name: "clock_domain not the host", file: "cam.timestamps.jsonl", line: 4,
            expect: "not the session's host_id"
        ) {
            edit($0, "cam.timestamps.jsonl", line: 4, #""clock_domain":"rig_01""#, #""clock_domain":"rig_02""#)
        },
        Breakage(name: "clock_source wrong", file: "imu.timestamps.jsonl", line: 2, expect: "clock_source") {
            edit($0, "imu.timestamps.jsonl", line: 2, "host_monotonic", "device")
        },
        Breakage(name: "number not spelled as the SDK", file: "imu.jsonl", line: 2, expect: "spelled 0.50") {
            edit($0, "imu.jsonl", line: 2, #""accel_x":0.5"#, #""accel_x":0.50"#)
        },
        Breakage(
            name: "whitespace in a line", file: "cam.timestamps.jsonl", line: 2,
            expect: "not spelled as the SDK writes it"
        ) {
            edit($0, "cam.timestamps.jsonl", line: 2, #""frame_number":1"#, #""frame_number": 1"#)
        },
        Breakage(name: "channel keys unsorted", file: "imu.jsonl", line: 3, expect: "Foundation's sorted order") {
            edit($0, "imu.jsonl", line: 3, #""a":0.1,"b":1.5"#, #""b":1.5,"a":0.1"#)
        },
        Breakage(name: "channel leaf not a number", file: "imu.jsonl", line: 1, expect: "channels.g.0 is a string") {
            edit($0, "imu.jsonl", line: 1, #""g":[1,"#, #""g":["1","#)
        },
        Breakage(name: "sensor line without its timestamp line", file: "imu.jsonl", line: 5, expect: "no matching line")
        {
            edit($0, "imu.jsonl", line: 5, #""frame_number":4"#, #""frame_number":7"#)
        },
        Breakage(
            name: "sensor file without timestamps file", file: "imu.jsonl", line: nil,
            expect: "has no imu.timestamps.jsonl"
        ) {
            try! FileManager.default.removeItem(atPath: $0.file("imu.timestamps.jsonl"))
        },
        Breakage(name: "manifest missing", file: "manifest.json", line: nil, expect: "missing") {
            try! FileManager.default.removeItem(atPath: $0.file("manifest.json"))
        },
        Breakage(name: "manifest frame_count wrong", file: "manifest.json", line: nil, expect: "frame_count is 6") {
            edit($0, "manifest.json", #""frame_count": 5,\#n      "path""#, #""frame_count": 6,\#n      "path""#)
        },
        Breakage(
            name: "manifest host differs", file: "manifest.json", line: nil, expect: "differs from sync_point.json"
        ) {
            edit($0, "manifest.json", #""host_id": "rig_01""#, #""host_id": "rig_02""#)
        },
        Breakage(
            name: "manifest misses a stream", file: "manifest.json", line: nil, expect: "does not list stream 'extra'"
        ) {
            let source = $0.file("cam.timestamps.jsonl")
            try! FileManager.default.copyItem(atPath: source, toPath: $0.file("extra.timestamps.jsonl"))
        },
        Breakage(name: "sensor typed as video", file: "manifest.json", line: nil, expect: "type must be \"sensor\"") {
            edit($0, "manifest.json", #""type": "sensor""#, #""type": "video""#)
        },
        Breakage(name: "manifest layout differs", file: "manifest.json", line: nil, expect: "not laid out") {
            edit($0, "manifest.json", #""host_id": "rig_01""#, #""host_id" : "rig_01""#)
        },
        Breakage(name: "sync point missing", file: "sync_point.json", line: nil, expect: "missing") {
            try! FileManager.default.removeItem(atPath: $0.file("sync_point.json"))
        },
        Breakage(
            name: "sync point timestamp_ms inconsistent", file: "sync_point.json", line: nil, expect: "timestamp_ms"
        ) {
            edit($0, "sync_point.json", #""timestamp_ms": "#, #""timestamp_ms": 1"#)
        },
        Breakage(name: "sync point iso_datetime malformed", file: "sync_point.json", line: nil, expect: "iso_datetime")
        {
            edit($0, "sync_point.json", "Z\"", "+00:00\"")
        },
        Breakage(name: "sync point sdk_version", file: "sync_point.json", line: nil, expect: "sdk_version") {
            edit($0, "sync_point.json", "0.1.0", "0.2.0")
        },
    ]

    @Test("each broken rule is reported with its file and line", arguments: breakages)
    func brokenRule(_ breakage: Breakage) throws {
        let directory = try Self.makeSession()
        breakage.apply(directory)
        let report = SessionValidator.validate(directory: directory.path)
        #expect(!report.isValid)
        let match = report.problems.first {
            $0.file == breakage.file && $0.line == breakage.line && $0.message.contains(breakage.expect)
        }
        #expect(
            match != nil,
            """
            expected \(breakage.file):\(breakage.line.map(String.init) ?? "-") \
            '\(breakage.expect)', got \(report.problems)
            """
        )
    }

    @Test("progress: reported through every stream file, ever further, ending at their total size")
    func progress() throws {
        let directory = TemporaryDirectory("validator-progress")
        let session = SyncSession(hostId: "rig_01", outputDir: directory.path)
        try session.start()
        let imu = try session.sensorStream("imu", channels: ["accel_x", "accel_y", "accel_z"])
        // About 3 MB of sensor lines: progress comes within the file, not only at its end.
        for frame in 0..<25_000 {
            try imu.record(
                frameNumber: frame, values: [0.125 * Double(frame), -9.81, 1e-3], captureNs: UInt64(1_000 + frame))
        }
        try session.stamp("cam", frameNumber: 0, captureNs: 5)
        try session.stop()
        var seen: [SessionValidator.Progress] = []
        let report = SessionValidator.validate(directory: directory.path) { seen.append($0) }
        #expect(report.isValid, "\(report.problems)")
        let streamFiles = ["cam.timestamps.jsonl", "imu.timestamps.jsonl", "imu.jsonl"]
        let total = streamFiles.reduce(0) { $0 + directory.read($1)!.utf8.count }
        #expect(total > 3 << 20)
        #expect(Set(seen.map(\.file)) == Set(streamFiles))
        #expect(seen.filter { $0.file == "imu.jsonl" }.count >= 3)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.bytesDone <= $1.bytesDone })
        #expect(seen.allSatisfy { $0.bytesTotal == total && $0.bytesDone <= total })
        #expect(seen.last?.bytesDone == total)
    }

    @Test("the integer fast path of the spelling check agrees with the full comparison")
    func integerFastPath() {
        var cases = [
            "0", "-0", "00", "01", "-01", "-", "", "+1", "1e3", "1.0", "1.5", "-1", "10", "-10",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "18446744073709551615", "18446744073709551616", "1E2", "0.0", "-0.0", " 1", "1 ",
        ]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            cases.append(String(Int64.random(in: .min ... .max, using: &random)))
            cases.append(String(UInt64.random(in: 0 ... .max, using: &random)))
            let digits = (0..<Int.random(in: 1...22, using: &random)).map { _ in
                String(Int.random(in: 0...9, using: &random))
            }
            cases.append((Bool.random(using: &random) ? "-" : "") + digits.joined())
        }
        for text in cases {
            #expect(
                CanonicalJSON.isCanonical(number: text) == CanonicalJSON.spellings(ofNumber: text).contains(text),
                "\(text)")
        }
    }

    @Test("a one-stream session is valid, with a warning that the service would drop it")
    func singleStreamWarning() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        try session.stamp("cam", frameNumber: 0)
        try session.stop()
        let report = SessionValidator.validate(directory: directory.path)
        #expect(report.isValid)
        #expect(report.warnings.first?.message.contains("fewer than two") == true)
    }

    @Test("holes longer than the caller's threshold are listed from the same read, only for the streams asked")
    func holesFromTheSameRead() throws {
        let directory = TemporaryDirectory("validator-holes")
        let session = SyncSession(hostId: "rig_01", outputDir: directory.path)
        try session.start()
        for (frame, ns) in [1_000, 2_000, 9_000, 9_500, 20_000].enumerated() {
            try session.stamp("cam", frameNumber: frame, captureNs: UInt64(ns))
            try session.stamp("imu", frameNumber: frame, captureNs: UInt64(ns))
        }
        try session.stop()
        let report = SessionValidator.validate(
            directory: directory.path, holesLongerThan: { $0 == "cam" ? 5_000 : nil })
        #expect(report.isValid)
        #expect(
            report.holes == [
                .init(
                    stream: "cam", line: 3, previousFrameNumber: 1, previousCaptureNs: 2_000, frameNumber: 2,
                    captureNs: 9_000),
                .init(
                    stream: "cam", line: 5, previousFrameNumber: 3, previousCaptureNs: 9_500, frameNumber: 4,
                    captureNs: 20_000),
            ])
        #expect(SessionValidator.validate(directory: directory.path).holes.isEmpty)
    }

    @Test(
        "the strict parser rejects what JSON does not allow",
        arguments: [
            "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}", "{\"a\":-}", "{\"a\":1e}", "{\"a\":\"\u{01}\"}",
            "{\"a\":\"\\x\"}",
            "{\"a\":1,}", "{\"a\" 1}", "[1,]", "{\"a\":\"\\ud800\"}", "{} {}", "nul", "{\"a\":tru}",
        ])
    func parserRejects(text: String) {
        #expect(throws: JSONTextParser.Failure.self) { try JSONTextParser.parse(Array(text.utf8)) }
    }

    @Test("the strict parser keeps member order and number spellings")
    func parserKeepsSpelling() throws {
        let value = try JSONTextParser.parse(Array(#"{"b":1.50,"a":[1e+16,-0],"c":"\u00e9\ud83d\ude00\/"}"#.utf8))
        #expect(value.keys == ["b", "a", "c"])
        #expect(value["b"] == .number("1.50"))
        #expect(value["a"] == .array([.number("1e+16"), .number("-0")]))
        #expect(value["c"] == .string("é😀/"))
    }
}
