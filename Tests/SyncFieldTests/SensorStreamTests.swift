import Foundation
import TestSupport
import Testing

@testable import SyncField

@Suite("Fixed-shape sensor streams")
struct SensorStreamTests {
    @Test("a fixed-shape record writes the same bytes as record() with a dictionary")
    func sameBytesAsDictionary() throws {
        let names = ["gyro_z", "accel_x", "ch10", "ch2", "Accel_Y", "temp", "b_1", "B1"]
        var random = SplitMix64(seed: 3)
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "imu_rig", outputDir: directory.path)
        try session.start()
        let fixed = try session.sensorStream("fixed", channels: names)
        for frame in 0..<500 {
            let values = names.map { _ in Double.random(in: -1e3...1e3, using: &random) * (frame % 7 == 0 ? 1e-9 : 1) }
            let ns = UInt64(frame) * 1_000_000
            try fixed.record(frameNumber: frame, values: values, captureNs: ns)
            try session.record(
                "dict", frameNumber: frame, channels: Dictionary(uniqueKeysWithValues: zip(names, values)),
                captureNs: ns)
        }
        #expect(try session.stop() == ["fixed": 500, "dict": 500])
        #expect(directory.read("fixed.jsonl") == directory.read("dict.jsonl"))
        #expect(directory.read("fixed.timestamps.jsonl") == directory.read("dict.timestamps.jsonl"))
        #expect(directory.lines("fixed.jsonl").count == 500)
    }

    @Test("layouts are checked: count, duplicates, a second different layout, wrong value count")
    func layoutErrors() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "h", outputDir: directory.path)
        #expect(throws: SyncFieldError.self) { _ = try session.sensorStream("s", channels: []) }
        #expect(throws: SyncFieldError.self) { _ = try session.sensorStream("s", channels: ["a", "a"]) }
        #expect(throws: SyncFieldError.self) {
            _ = try session.sensorStream("s", channels: (0..<17).map { "c\($0)" })
        }
        let stream = try session.sensorStream("s", channels: ["a", "b"])
        #expect(try session.sensorStream("s", channels: ["a", "b"]).channelNames == ["a", "b"])
        #expect(throws: SyncFieldError.self) { _ = try session.sensorStream("s", channels: ["b", "a"]) }
        #expect(throws: SyncFieldError.sessionNotStarted) { try stream.record(frameNumber: 0, values: [1, 2]) }
        try session.start()
        #expect(throws: SyncFieldError.self) { try stream.record(frameNumber: 0, values: [1]) }
        try stream.record(frameNumber: 0, values: [1, 2])
        #expect(try session.stop() == ["s": 1])
        // The handle keeps working in the next run.
        try session.start()
        try stream.record(frameNumber: 0, values: [3, 4])
        try stream.record(frameNumber: 1, values: [5, 6])
        #expect(try session.stop() == ["s": 2])
        #expect(directory.lines("s.jsonl").map { $0.contains(#""channels":{"a":5,"b":6}"#) } == [false, true])
    }
}
