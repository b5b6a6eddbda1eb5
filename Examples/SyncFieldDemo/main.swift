// A Linux program using the SyncField module the way an iOS app uses the SDK: two simulated
// cameras at 30 fps and a simulated IMU at 200 Hz, each on its own thread, recorded into one
// session directory for a few seconds.
//
//   swift run SyncFieldDemo [OUTPUT_DIR] [SECONDS]
import Foundation
import SyncField

let arguments = CommandLine.arguments
let outputDir = arguments.count > 1 ? arguments[1] : "sessions/demo-\(Int(Date().timeIntervalSince1970))"
let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 3 : 3

let session = SyncSession(hostId: "linux_rig_01", outputDir: outputDir)
let syncPoint = try session.start()
print("recording \(seconds) s into \(outputDir) (sync point \(syncPoint.isoDatetime))")

let stop = DispatchTime.now() + seconds
let group = DispatchGroup()

/// Calls `body(i)` every `period` seconds on a thread of its own until the deadline.
func every(_ period: Double, _ body: @escaping @Sendable (Int) throws -> Void) {
    group.enter()
    Thread {
        var i = 0
        while DispatchTime.now() < stop {
            try! body(i)
            i += 1
            Thread.sleep(forTimeInterval: period)
        }
        group.leave()
    }.start()
}

for camera in ["cam_left", "cam_right"] {
    every(1.0 / 30) { i in
        // A real camera loop would dequeue a frame here, then stamp it immediately.
        try session.stamp(camera, frameNumber: i)
    }
    session.link(camera, path: "/data/\(camera).mp4")
}

// An IMU's channels never change, so it uses the allocation-free fixed-shape stream.
let imu = try session.sensorStream("imu", channels: ["accel_x", "accel_y", "accel_z", "gyro_x", "gyro_y", "gyro_z"])
every(1.0 / 200) { i in
    let t = Double(i) / 200
    try imu.record(frameNumber: i, values: [0.2 * sin(t), 0.1 * cos(t), -9.80665, 0.01, -0.02 * t, 0.5])
}

group.wait()
let counts = try session.stop()
for (stream, count) in counts.sorted(by: { $0.key < $1.key }) { print("  \(stream): \(count) lines") }
