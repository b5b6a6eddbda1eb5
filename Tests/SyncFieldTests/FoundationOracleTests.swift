import Foundation
import TestSupport
import Testing

@testable import SyncField

/// Foundation as the oracle: whatever channels we are given, our sensor line is the line
/// `JSONSerialization` with `.sortedKeys` writes for the SDK's dictionary.
@Suite("Foundation as the oracle")
struct FoundationOracleTests {
    /// Random values that stress every rule: key spellings that sort in surprising ways, and
    /// doubles from the whole range.
    struct Generator {
        var random: SplitMix64

        static let keyPieces: [String] = [
            "a", "A", "b", "B", "z", "Z", "_", "-", "x_y", "xy", "ch", "ch2", "ch10", "ch02", "01", "1", "10", "9",
            "é", "E", "ß", "ss", "中", "日本", "😀", "/", "a/b", "\\", "\"", "\n", "\t", "\u{01}", "\u{1F}", " ",
            "accel_x", "Accel_X", "gyro", "GYRO", "ﬁ", "Å", "å", "ä", "Ω", "ω", "0x", ".", "~", "\u{7F}",
        ]

        mutating func int(_ range: Range<Int>) -> Int { Int.random(in: range, using: &random) }

        mutating func key() -> String {
            (0..<int(1..<4)).map { _ in Self.keyPieces[int(0..<Self.keyPieces.count)] }.joined()
        }

        mutating func double() -> Double {
            switch int(0..<10) {
            case 0:
                let specials: [Double] = [
                    -0.0, 0, 1e16, 1e-5, 1e15, 0.1 + 0.2, .leastNonzeroMagnitude, .leastNormalMagnitude,
                    .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 5e-324, 2.2250738585072009e-308,
                    9007199254740993,
                    12, 100, 0.0001, 123456789012345678, 1e21, 1e-7,
                ]
                return specials[int(0..<specials.count)]
            case 1...4:
                var value: Double
                repeat { value = Double(bitPattern: random.next()) } while !value.isFinite
                return value
            default:
                return Double.random(in: -20...20, using: &random)
            }
        }

        mutating func leaf() -> Any {
            switch int(0..<6) {
            case 0: return Int(truncatingIfNeeded: random.next()) >> int(0..<63)
            case 1:
                let single = Float(double())
                return single.isFinite ? single : Float(1.5)
            case 2: return UInt64(random.next())
            default: return double()
            }
        }

        mutating func value(depth: Int) -> Any {
            guard depth < 4 else { return leaf() }
            switch int(0..<10) {
            case 0: return object(depth: depth + 1)
            case 1: return (0..<int(0..<5)).map { _ in value(depth: depth + 1) }
            case 2: return (0..<int(0..<4)).map { _ in (0..<int(0..<4)).map { _ in double() } }
            case 3: return (0..<int(0..<6)).map { _ in double() }
            default: return leaf()
            }
        }

        mutating func object(depth: Int) -> [String: Any] {
            var object: [String: Any] = [:]
            for _ in 0..<int(0..<8) { object[key()] = value(depth: depth) }
            return object
        }
    }

    static func sdkDictionary(_ channels: [String: Any], captureNs: UInt64, frame: Int, host: String) -> [String: Any] {
        [
            "capture_ns": captureNs, "channels": channels, "clock_domain": host, "clock_source": "host_monotonic",
            "frame_number": frame, "uncertainty_ns": UInt64(5_000_000),
        ]
    }

    @Test("random nested channel sets give Foundation's bytes", arguments: [1, 2, 3, 4])
    func randomChannels(seed: UInt64) throws {
        var generator = Generator(random: SplitMix64(seed: seed))
        let directory = TemporaryDirectory()
        let host = seed == 4 ? "rig/ü \"\u{01}" : "rig_\(seed)"
        let session = SyncSession(hostId: host, outputDir: directory.path)
        try session.start()
        var expected: [String] = []
        for frame in 0..<400 {
            var channels = generator.object(depth: 0)
            if channels.isEmpty { channels["only"] = generator.double() }
            let captureNs = UInt64(1_000_000 + frame)
            try session.record("s", frameNumber: frame, channels: channels, captureNs: captureNs)
            expected.append(
                try foundationLine(Self.sdkDictionary(channels, captureNs: captureNs, frame: frame, host: host)))
        }
        try session.stop()
        let ours = directory.lines("s.jsonl")
        #expect(ours.count == expected.count)
        for (index, (line, reference)) in zip(ours, expected).enumerated() where line != reference {
            Issue.record("record \(index) (seed \(seed)) differs:\nours:       \(line)\nFoundation: \(reference)")
            break
        }
    }

    @Test("a stream whose key set changes between records keeps Foundation's order every time")
    func changingKeySets() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        try session.start()
        let shapes: [[String: Any]] = [
            ["b": 1, "a": 2], ["a": 1, "c": 2], ["c": ["y": 1, "x": 2], "a": 1],
            ["c": ["x": 1, "z": 2], "a": [["q": 1, "p": 2]]],
            ["b": 1, "a": 2], ["a": 1, "b": 2, "ch10": 3, "ch2": 4],
        ]
        var expected: [String] = []
        for round in 0..<3 {
            for (index, channels) in shapes.enumerated() {
                let frame = round * shapes.count + index
                try session.record("s", frameNumber: frame, channels: channels, captureNs: 7)
                expected.append(try foundationLine(Self.sdkDictionary(channels, captureNs: 7, frame: frame, host: "h")))
            }
        }
        try session.stop()
        #expect(directory.lines("s.jsonl") == expected)
    }

    @Test("host ids and links with every escape give Foundation's pretty bytes")
    func prettyFiles() throws {
        let host = "rig \"01\"/\\\u{08}\u{0C}\n\r\t\u{01}\u{1F}é中😀 : x"
        let links = ["cam/../x": "/data/a b.mp4", "ü": "\u{00}", "cam": "/data/cam : 1.mp4"]
        let manifest = SessionManifest(
            hostId: host, timestampCounts: ["cam": 3, "imu": 0], recorded: ["imu"], links: links)
        let reference: [String: Any] = [
            "host_id": host, "sdk_version": "0.1.0",
            "streams": [
                "cam": [
                    "type": "video", "timestamps_path": "cam.timestamps.jsonl", "frame_count": 3,
                    "path": "/data/cam : 1.mp4",
                ],
                "imu": [
                    "type": "sensor", "sensor_path": "imu.jsonl", "timestamps_path": "imu.timestamps.jsonl",
                    "frame_count": 0,
                ],
                "cam/../x": ["type": "video", "path": "/data/a b.mp4"],
                "ü": ["type": "video", "path": "\u{00}"],
            ] as [String: Any],
        ]
        #expect(
            String(decoding: manifest.jsonValue.sdkPrettyBytes(), as: UTF8.self) == (try foundationPretty(reference)))
        let point = SyncPoint(monotonicNs: 42, wallClockNs: 1_700_000_000_987_654_321, hostId: host)
        var pointReference = point.toDict()
        pointReference["sdk_version"] = "0.1.0"
        #expect(
            String(decoding: point.jsonValue.sdkPrettyBytes(), as: UTF8.self) == (try foundationPretty(pointReference)))
    }
}
