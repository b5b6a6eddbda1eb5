import FieldcapSession
import Foundation
import SyncField
import Testing

@Suite("The session layout")
struct SessionLayoutTests {
    @Test("names the SyncField files exactly as SyncSession writes them")
    func syncFieldNames() throws {
        let path = NSTemporaryDirectory() + "/layout-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        try session.stamp("cam", frameNumber: 0)
        try session.record("imu", frameNumber: 0, channels: ["x": 1.0])
        _ = try session.stop()
        let written = Set(try FileManager.default.contentsOfDirectory(atPath: path))
        let named: Set = [
            SessionLayout.manifestName, SessionLayout.syncPointName, SessionLayout.timestampsName("cam"),
            SessionLayout.timestampsName("imu"), SessionLayout.sensorName("imu"),
        ]
        #expect(written == named)
    }
}
