// The SyncField Swift SDK README's examples (shared/seeds/000_*.txt), compiled in Swift 5 mode
// as an SDK user's app is and run against fieldcap's SyncField module. Each example's code is
// copied as the README prints it; only the stand-ins it assumes (a camera, an IMU, a place to
// save frames, an output URL) are defined around it.
import Foundation
import SyncField
import Testing

// MARK: - Stand-ins the README's snippets assume

struct Frame { let index: Int }
final class Camera {
    private(set) var next = 0
    func read() -> Frame {
        usleep(1_000)  // a 1 kHz "camera", so the loops make progress but do not spin
        defer { next += 1 }
        return Frame(index: next)
    }
}
struct IMUSample { let ax, ay, az, gx, gy, gz: Double }
final class IMU {
    private var t = 0.0
    private(set) var reads = 0
    func read() -> IMUSample {
        usleep(200)
        reads += 1
        t += 0.001
        return IMUSample(ax: sin(t), ay: cos(t), az: -9.81, gx: 0.01 * t, gy: -0.02, gz: 0.5)
    }
}
var savedFrames: [String: Int] = [:]
let savedFramesLock = NSLock()
func saveFrame(_ frame: Frame, to path: String) {
    savedFramesLock.lock()
    savedFrames[path, default: 0] += 1
    savedFramesLock.unlock()
}

func makeOutputURL() -> URL {
    URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sdk-readme-\(UUID().uuidString)")
}

func expectValid(_ outputURL: URL) {
    let report = SessionValidator.validate(directory: outputURL.path)
    #expect(report.problems.isEmpty, "\(report.problems)")
}

@Suite("The SDK README's examples")
struct SDKReadmeExamplesTests {
    @Test("Quick Start: video streams")
    func videoStreams() throws {
        let outputURL = makeOutputURL()
        let camera = Camera()
        let numFrames = 30

        let session = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try session.start()

        for i in 0..<numFrames {
            let frame = camera.read()
            try session.stamp("cam_ego", frameNumber: i)
            saveFrame(frame, to: "cam_ego.mp4")
        }

        session.link("cam_ego", path: "/data/cam_ego.mp4")
        try session.stop()

        let files = try FileManager.default.contentsOfDirectory(atPath: outputURL.path).sorted()
        #expect(files == ["cam_ego.timestamps.jsonl", "manifest.json", "sync_point.json"])
        expectValid(outputURL)
    }

    @Test("Quick Start: sensor streams")
    func sensorStreams() throws {
        let outputURL = makeOutputURL()
        let imu = IMU()
        let numSamples = 100

        let session = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try session.start()

        for i in 0..<numSamples {
            let data = imu.read()
            try session.record(
                "imu", frameNumber: i,
                channels: [
                    "accel_x": data.ax,
                    "accel_y": data.ay,
                    "accel_z": data.az,
                ])
        }

        try session.stop()

        let files = try FileManager.default.contentsOfDirectory(atPath: outputURL.path).sorted()
        #expect(files == ["imu.jsonl", "imu.timestamps.jsonl", "manifest.json", "sync_point.json"])
        expectValid(outputURL)
    }

    @Test("Complex sensor data: nested channels")
    func complexSensorData() throws {
        let outputURL = makeOutputURL()
        let session = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try session.start()
        for i in 0..<3 {
            // Hand tracker -- nested joint positions and gestures
            try session.record(
                "hand_tracker", frameNumber: i,
                channels: [
                    "joints": [
                        "wrist": [0.1, 0.2, 0.3],
                        "thumb_tip": [0.4, 0.5, 0.6],
                        "index_tip": [0.7, 0.8, 0.9],
                    ] as [String: Any],
                    "gestures": ["pinch": 0.95, "fist": 0.02] as [String: Any],
                    "finger_angles": [12.5, 45.0, 30.0, 15.0, 5.0],
                ])

            // Tactile grid -- 2D pressure array
            try session.record(
                "tactile", frameNumber: i,
                channels: [
                    "pressure_grid": [
                        [0.1, 0.2, 0.3, 0.4],
                        [0.5, 0.6, 0.7, 0.8],
                    ],
                    "total_force": 12.5,
                ])

            // Robot arm -- joint states
            try session.record(
                "robot_arm", frameNumber: i,
                channels: [
                    "joint_positions": [0.0, -1.57, 0.0, -1.57, 0.0, 0.0],
                    "joint_velocities": [0.01, -0.02, 0.0, 0.01, 0.0, 0.0],
                    "gripper": ["width": 0.04, "force": 5.2] as [String: Any],
                ])
        }
        #expect(try session.stop() == ["hand_tracker": 3, "tactile": 3, "robot_arm": 3])
        let hand = try String(contentsOf: outputURL.appendingPathComponent("hand_tracker.jsonl"), encoding: .utf8)
        #expect(
            hand.contains(
                #""channels":{"finger_angles":[12.5,45,30,15,5],"gestures":{"fist":0.02,"pinch":0.95},"#
                    + #""joints":{"index_tip":[0.7,0.8,0.9],"thumb_tip":[0.4,0.5,0.6],"wrist":[0.1,0.2,0.3]}}"#
            ))
        let tactile = try String(contentsOf: outputURL.appendingPathComponent("tactile.jsonl"), encoding: .utf8)
        #expect(
            tactile.contains(#""channels":{"pressure_grid":[[0.1,0.2,0.3,0.4],[0.5,0.6,0.7,0.8]],"total_force":12.5}"#))
        expectValid(outputURL)
    }

    @Test("Multi-stream example: 2 cameras and 1 IMU, each on its own DispatchQueue")
    func multiStream() throws {
        let outputURL = makeOutputURL()
        let camLeft = Camera(), camRight = Camera(), imuDevice = IMU()

        let session = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try session.start()

        var recording = true

        func cameraLoop(cam: Camera, streamId: String, videoPath: String) {
            var i = 0
            while recording {
                let frame = cam.read()
                try? session.stamp(streamId, frameNumber: i)
                saveFrame(frame, to: videoPath)
                i += 1
            }
            session.link(streamId, path: videoPath)
        }

        func imuLoop(imu: IMU, streamId: String) {
            var i = 0
            while recording {
                let data = imu.read()
                try? session.record(
                    streamId, frameNumber: i,
                    channels: [
                        "accel_x": data.ax, "accel_y": data.ay, "accel_z": data.az,
                        "gyro_x": data.gx, "gyro_y": data.gy, "gyro_z": data.gz,
                    ])
                i += 1
            }
        }

        let queue = DispatchQueue(label: "capture", attributes: .concurrent)
        queue.async { cameraLoop(cam: camLeft, streamId: "cam_left", videoPath: "/data/cam_left.mp4") }
        queue.async { cameraLoop(cam: camRight, streamId: "cam_right", videoPath: "/data/cam_right.mp4") }
        queue.async { imuLoop(imu: imuDevice, streamId: "imu") }

        // ... record for desired duration ...
        // (here: until every loop has run a while. On Linux, libdispatch gives a concurrent queue
        // as many threads as cores and adds one only when its monitor sees the others blocked:
        // with two cores, the third loop can wait tens of seconds on a loaded machine.)
        let deadline = Date().addingTimeInterval(90)
        repeat {
            usleep(50_000)
        } while (camLeft.next < 20 || camRight.next < 20 || imuDevice.reads < 20) && Date() < deadline
        recording = false

        let counts = try session.stop()
        // counts == ["cam_left": 900, "cam_right": 900, "imu": 9000]

        queue.sync(flags: .barrier) {}
        #expect(Set(counts.keys) == ["cam_left", "cam_right", "imu"])
        #expect(counts.values.allSatisfy { $0 > 0 })
        for (id, count) in counts {
            let text = try String(
                contentsOf: outputURL.appendingPathComponent("\(id).timestamps.jsonl"), encoding: .utf8)
            #expect(text.split(separator: "\n").count == count)
        }
        expectValid(outputURL)
    }

    @Test("Best practices: stamp right after the read; pre-captured timestamps")
    func bestPractices() throws {
        let outputURL = makeOutputURL()
        let session = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try session.start()
        let i = 0

        // GOOD -- timestamp reflects when data arrived on the host
        let device = IMU()
        let data = device.read()
        try session.stamp("sensor", frameNumber: i)  // immediately after read
        _ = data

        let captureNs = MonotonicClock.now()  // capture immediately
        // ... some unavoidable overhead ...
        try session.stamp("cam", frameNumber: i, captureNs: captureNs)

        #expect(try session.stop() == ["sensor": 1, "cam": 1])
        let cam = try String(contentsOf: outputURL.appendingPathComponent("cam.timestamps.jsonl"), encoding: .utf8)
        #expect(cam.hasPrefix("{\"capture_ns\":\(captureNs),"))
    }

    @Test("Integration: building the service's request from manifest.json")
    func manifestIntegration() throws {
        let outputURL = makeOutputURL()
        let setup = SyncSession(hostId: "iphone_01", outputDir: outputURL)
        try setup.start()
        try setup.stamp("cam_ego", frameNumber: 0)
        try setup.stamp("cam_wrist", frameNumber: 0)
        try setup.record("imu", frameNumber: 0, channels: ["accel_x": 0.1])
        setup.link("cam_ego", path: "/data/cam_ego.mp4")
        setup.link("cam_wrist", path: "/data/cam_wrist.mp4")
        try setup.stop()

        let manifestData = try Data(contentsOf: outputURL.appendingPathComponent("manifest.json"))
        let manifest = try JSONSerialization.jsonObject(with: manifestData) as! [String: Any]

        let hostId = manifest["host_id"] as! String
        let streamsMap = manifest["streams"] as! [String: [String: Any]]

        var streams: [[String: Any]] = []
        for (streamId, info) in streamsMap {
            var entry: [String: Any] = ["stream_id": streamId]
            if let path = info["path"] { entry["path"] = path }
            if info["type"] as? String == "sensor" { entry["stream_type"] = "sensor" }
            streams.append(entry)
        }

        // Mark first video as primary
        if let idx = streams.firstIndex(where: {
            streamsMap[$0["stream_id"] as! String]?["type"] as? String == "video"
        }) {
            streams[idx]["is_primary"] = true
        }

        let body: [String: Any] = [
            "hosts": [["host_id": hostId, "streams": streams]],
            "timestamps_dir": "/timestamps",
        ]

        #expect(hostId == "iphone_01")
        #expect(streams.count == 3)
        #expect(streams.filter { $0["is_primary"] as? Bool == true }.count == 1)
        #expect(streams.contains { $0["stream_id"] as? String == "imu" && $0["stream_type"] as? String == "sensor" })
        #expect(JSONSerialization.isValidJSONObject(body))
    }
}
