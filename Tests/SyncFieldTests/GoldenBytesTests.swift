import Foundation
import Testing

@testable import SyncField

/// The examples of `syncfield-format.md`, byte for byte.
@Suite("Golden bytes from the format doc")
struct GoldenBytesTests {
    @Test("a timestamp line")
    func timestampLine() {
        let line = FrameTimestamp(frameNumber: 0, captureNs: 1_234_567_890_123_456_789, clockDomain: "rig_01")
            .jsonLine()
        #expect(
            String(decoding: line, as: UTF8.self) == """
                {"capture_ns":1234567890123456789,"clock_domain":"rig_01","clock_source":"host_monotonic",\
                "frame_number":0,"uncertainty_ns":5000000}

                """)
    }

    nonisolated(unsafe) static let docSensorChannels: [String: Any] = [
        "a": 2, "accel_x": 0.12, "accel_y": -9.8, "accel_z": 12.0, "B": 1, "ch2": 2, "ch10": 1,
        "f32": Float(0.1), "gyro": [1e-05, 1e16, 0.1 + 0.2, -0.0, Double(Float(0.1))], "i": 3,
        "joints": ["wrist": [0.1, 0.2]], "x_y": 1, "xy": 2,
    ]

    static let docSensorLine = """
        {"capture_ns":1234567890123456789,"channels":{"a":2,"accel_x":0.12,"accel_y":-9.8,"accel_z":12,"B":1,"ch2":2,\
        "ch10":1,"f32":0.1,"gyro":[1e-05,1e+16,0.30000000000000004,-0,0.10000000149011612],"i":3,\
        "joints":{"wrist":[0.1,0.2]},"x_y":1,"xy":2},"clock_domain":"rig_01","clock_source":"host_monotonic",\
        "frame_number":0,"uncertainty_ns":5000000}
        """

    @Test("a sensor line, through a real session")
    func sensorLine() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "rig_01", outputDir: directory.path)
        try session.start()
        try session.record(
            "imu", frameNumber: 0, channels: Self.docSensorChannels, captureNs: 1_234_567_890_123_456_789)
        let counts = try session.stop()
        #expect(counts == ["imu": 1])
        #expect(directory.lines("imu.jsonl") == [Self.docSensorLine])
        #expect(
            directory.lines("imu.timestamps.jsonl") == [
                #"{"capture_ns":1234567890123456789,"clock_domain":"rig_01","#
                    + #""clock_source":"host_monotonic","frame_number":0,"uncertainty_ns":5000000}"#
            ])
    }

    @Test("the doc's sensor line is what JSONSerialization writes too")
    func sensorLineMatchesFoundation() throws {
        let object: [String: Any] = [
            "capture_ns": UInt64(1_234_567_890_123_456_789), "channels": Self.docSensorChannels,
            "clock_domain": "rig_01", "clock_source": "host_monotonic", "frame_number": 0,
            "uncertainty_ns": UInt64(5_000_000),
        ]
        #expect(try foundationLine(object) == Self.docSensorLine)
    }

    @Test("sync_point.json")
    func syncPoint() {
        let point = SyncPoint(
            monotonicNs: 1_234_567_890_123_456_789, wallClockNs: 1_709_890_101_123_000_000, hostId: "rig_01")
        #expect(
            String(decoding: point.jsonValue.sdkPrettyBytes(), as: UTF8.self) == """
                {
                  "host_id": "rig_01",
                  "iso_datetime": "2024-03-08T09:28:21.123Z",
                  "monotonic_ns": 1234567890123456789,
                  "sdk_version": "0.1.0",
                  "timestamp_ms": 1709890101123,
                  "wall_clock_ns": 1709890101123000000
                }

                """)
    }

    @Test("manifest.json")
    func manifest() {
        let manifest = SessionManifest(
            hostId: "rig_01", timestampCounts: ["cam": 5, "imu": 10], recorded: ["imu"], links: ["cam": "/data/cam.mp4"]
        )
        #expect(
            String(decoding: manifest.jsonValue.sdkPrettyBytes(), as: UTF8.self) == """
                {
                  "host_id": "rig_01",
                  "sdk_version": "0.1.0",
                  "streams": {
                    "cam": {
                      "frame_count": 5,
                      "path": "\\/data\\/cam.mp4",
                      "timestamps_path": "cam.timestamps.jsonl",
                      "type": "video"
                    },
                    "imu": {
                      "frame_count": 10,
                      "sensor_path": "imu.jsonl",
                      "timestamps_path": "imu.timestamps.jsonl",
                      "type": "sensor"
                    }
                  }
                }

                """)
    }

    @Test("an empty manifest prints its empty object as the SDK does")
    func emptyManifest() throws {
        let manifest = SessionManifest(hostId: "rig_01", timestampCounts: [:], recorded: [], links: [:])
        let expected = try foundationPretty(["host_id": "rig_01", "sdk_version": "0.1.0", "streams": [String: Any]()])
        #expect(String(decoding: manifest.jsonValue.sdkPrettyBytes(), as: UTF8.self) == expected)
        #expect(expected.contains("\"streams\": {\n\n  }"))
    }

    @Test("the SDK README's format specification lines")
    func sdkReadmeLines() throws {
        let directory = TemporaryDirectory()
        let session = SyncSession(hostId: "iphone_01", outputDir: directory.path)
        try session.start()
        try session.stamp("cam_ego", frameNumber: 0, captureNs: 1_234_567_890_123_456_789)
        try session.stamp("cam_ego", frameNumber: 1, captureNs: 1_234_567_890_156_789_012)
        try session.record(
            "imu", frameNumber: 0, channels: ["accel_x": 0.12, "accel_y": -9.8, "accel_z": 0.05],
            captureNs: 1_234_567_890_123_456_789)
        try session.stop()
        #expect(
            directory.lines("cam_ego.timestamps.jsonl") == [
                #"{"capture_ns":1234567890123456789,"clock_domain":"iphone_01","#
                    + #""clock_source":"host_monotonic","frame_number":0,"uncertainty_ns":5000000}"#,
                #"{"capture_ns":1234567890156789012,"clock_domain":"iphone_01","#
                    + #""clock_source":"host_monotonic","frame_number":1,"uncertainty_ns":5000000}"#,
            ])
        #expect(
            directory.lines("imu.jsonl") == [
                #"{"capture_ns":1234567890123456789,"channels":{"accel_x":0.12,"#
                    + #""accel_y":-9.8,"accel_z":0.05},"clock_domain":"iphone_01","#
                    + #""clock_source":"host_monotonic","frame_number":0,"uncertainty_ns":5000000}"#
            ])
    }

    @Test("the SDK README's manifest example, in the order the SDK's code writes it")
    func sdkReadmeManifest() throws {
        let manifest = SessionManifest(
            hostId: "iphone_01", timestampCounts: ["cam_ego": 900, "cam_wrist": 900, "imu": 9000], recorded: ["imu"],
            links: ["cam_ego": "/data/cam_ego.mp4", "cam_wrist": "/data/cam_wrist.mp4"])
        let text = String(decoding: manifest.jsonValue.sdkPrettyBytes(), as: UTF8.self)
        // The README lists the fields unsorted; JSONSerialization with .sortedKeys, as the SDK
        // calls it, sorts them. Same content, the SDK's layout.
        let reference: [String: Any] = [
            "sdk_version": "0.1.0", "host_id": "iphone_01",
            "streams": [
                "cam_ego": [
                    "type": "video", "timestamps_path": "cam_ego.timestamps.jsonl", "frame_count": 900,
                    "path": "/data/cam_ego.mp4",
                ],
                "cam_wrist": [
                    "type": "video", "timestamps_path": "cam_wrist.timestamps.jsonl", "frame_count": 900,
                    "path": "/data/cam_wrist.mp4",
                ],
                "imu": [
                    "type": "sensor", "sensor_path": "imu.jsonl", "timestamps_path": "imu.timestamps.jsonl",
                    "frame_count": 9000,
                ],
            ] as [String: Any],
        ]
        #expect(text == (try foundationPretty(reference)))
        #expect(
            text.hasPrefix(
                "{\n  \"host_id\": \"iphone_01\",\n  \"sdk_version\": \"0.1.0\",\n"
                    + "  \"streams\": {\n    \"cam_ego\": {\n      \"frame_count\": 900,"
            ))
    }
}
