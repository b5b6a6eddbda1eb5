import FieldcapCore
import Foundation
import SyncField
import Testing

@testable import FieldcapSession

/// A recording driven without the command line: what a second front end (a service) does.
@Suite("Recording controller")
struct RecordingControllerTests {
    static func scratch() -> String { NSTemporaryDirectory() + "recording-\(UUID().uuidString)" }

    @Test("start, status, stop by duration: a complete session that validates, with its sidecar")
    func recordsBySettingsAlone() throws {
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recording = RecordingController(
            sources: [
                SyntheticCamera(id: "cam0", width: 64, height: 48, rate: 30), SyntheticIMU(id: "imu0", rate: 200),
            ],
            settings: .init(hostId: "rig", root: root, duration: TimeSpan(seconds: 1), minFree: ByteSize(bytes: 0)))
        try recording.start()
        let directory = try #require(recording.directory)
        #expect(directory.hasPrefix("\(root)/rig-"))
        var reason: RecordingController.StopReason?
        while reason == nil {
            usleep(50_000)
            reason = recording.checkStop()
        }
        #expect(reason == .duration)
        #expect(recording.statistics.map(\.id) == ["cam0", "imu0"])
        let outcome = try recording.stop(reason: reason!)
        #expect(outcome.writeFailure == nil)
        #expect(outcome.summary.allSatisfy { $0.written > 0 && $0.captureError == nil })
        #expect(SessionValidator.validateWithVideos(directory: directory).isValid)
        let layout = SessionLayout(directory: directory)
        let sidecar = try #require(Sidecar.Contents(layout: layout))
        #expect(sidecar.state == "complete")
        #expect(sidecar.document["stop_reason"] == "duration")
        #expect(sidecar.streams.map(\.id) == ["cam0", "imu0"])
        for file in [
            layout.video("cam0"), layout.frameLog("cam0"), layout.timestamps("cam0"), layout.sensor("imu0"),
            layout.manifest,
        ] {
            #expect(FileManager.default.fileExists(atPath: file), "\(file)")
        }
        #expect(!FileManager.default.fileExists(atPath: layout.reserve))
    }

    @Test("a directory that exists is refused before anything is written into it")
    func refusesAnExistingDirectory() throws {
        let out = Self.scratch()
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: out) }
        let recording = RecordingController(
            sources: [SyntheticIMU(id: "imu0", rate: 100)],
            settings: .init(hostId: "rig", out: out, root: out, minFree: ByteSize(bytes: 0)))
        #expect(throws: RecordingController.StartError.self) { try recording.start() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
    }

    @Test("stop reasons read as the sidecar's stop_reason always has")
    func stopReasons() {
        #expect(RecordingController.StopReason.duration.description == "duration")
        #expect(RecordingController.StopReason.requested("SIGINT").description == "SIGINT")
        #expect(RecordingController.StopReason.writeFailed.description == "write failed")
        #expect(
            RecordingController.StopReason.diskNearlyFull(free: 100 << 20, minFree: ByteSize(bytes: 256 << 20))
                .description
                    == """
                    disk nearly full (\(ByteSize(bytes: 100 << 20)) \
                    free, below --min-free \(ByteSize(bytes: 256 << 20)))
                    """
        )
        #expect(RecordingController.StopReason.writeError("x", diskFull: true).description == "disk full (x)")
    }

    @Test(
        """
        FAT's 4 GiB: a warning names the camera whose video reaches it within one \
        file's span, and a segment length under it; none when each file stays under
        """
    )
    func fileSizeWarning() throws {
        let limit: UInt64 = (1 << 32) - 1
        // A raw 640x480 YUYV camera at 30 fps: 18.4 MB/s, 4 GiB in about 3 min 53 s.
        let cameras = [(id: "cam", bytesPerSecond: 640.0 * 480 * 2 * 30), (id: "small", bytesPerSecond: 1e6)]
        let warning = try #require(
            RecordingController.fileSizeWarning(limit: limit, fileSystem: "vfat", cameras: cameras, span: nil))
        #expect(
            warning.contains("vfat holds files of at most 4 GiB, which cam's video reaches after about"), "\(warning)")
        #expect(warning.contains("--segment 3m"), "\(warning)")
        #expect(
            RecordingController.fileSizeWarning(limit: limit, fileSystem: "vfat", cameras: cameras, span: 600) != nil)
        #expect(
            RecordingController.fileSizeWarning(limit: limit, fileSystem: "vfat", cameras: cameras, span: 60) == nil)
        #expect(RecordingController.fileSizeWarning(limit: limit, fileSystem: "vfat", cameras: [], span: nil) == nil)
    }

}
