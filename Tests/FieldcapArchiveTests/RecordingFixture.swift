import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import SyncField

/// One synthetic segmented recording the archive tests share (recorded once, read by many):
/// two small cameras and a 200 Hz IMU for 4.5 s in 1 s segments. Tests that change a recording
/// copy it first.
enum RecordingFixture {
    struct Recorded: Sendable {
        let root: String
        let directory: String
    }

    static let shared: Result<Recorded, Error> = Result { try record() }

    static func recording() throws -> Recorded { try shared.get() }

    static func record() throws -> Recorded {
        let root = NSTemporaryDirectory() + "archive-fixture-\(UUID().uuidString)"
        let recording = RecordingController(
            sources: [
                SyntheticCamera(id: "cam0", width: 64, height: 48, rate: 30),
                SyntheticCamera(id: "cam1", width: 32, height: 24, rate: 15), SyntheticIMU(id: "imu", rate: 200),
            ],
            settings: .init(
                hostId: "rig", root: root, duration: TimeSpan(seconds: 4.5), minFree: ByteSize(bytes: 0),
                segments: SegmentedSessions.Settings(lengthNs: 1_000_000_000, budget: StorageBudget())))
        try recording.start()
        var reason: RecordingController.StopReason?
        while reason == nil {
            usleep(20_000)
            reason = recording.checkStop()
        }
        _ = try recording.stop(reason: reason!)
        return Recorded(root: root, directory: recording.directory!)
    }

    /// A copy of the shared recording's root, for a test that changes it.
    static func copy() throws -> Recorded {
        let original = try recording()
        let root = NSTemporaryDirectory() + "archive-copy-\(UUID().uuidString)"
        try FileManager.default.copyItem(atPath: original.root, toPath: root)
        return Recorded(root: root, directory: "\(root)/\((original.directory as NSString).lastPathComponent)")
    }

    static func temporary(_ name: String) -> String { NSTemporaryDirectory() + "\(name)-\(UUID().uuidString)" }

    /// Each line of a JSON lines file, parsed.
    static func lines(_ path: String) throws -> [[String: Any]] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
    }

    /// `sync_point.json`'s two clocks, read as the service reads them.
    static func syncPoint(_ directory: String) throws -> (monotonic: Int64, wall: Int64) {
        let object =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(directory)/sync_point.json")))
            as! [String: Any]
        return ((object["monotonic_ns"] as! NSNumber).int64Value, (object["wall_clock_ns"] as! NSNumber).int64Value)
    }
}
