import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import Testing

@testable import FieldcapMedia

/// A recording whose file system loses written bytes (#43) does not end as a complete session.
@Suite("A recording that lost written data is not complete")
struct LostDataRecordingTests {
    @Test("a video frame lost after it was written: the stop reports a failed write and the sidecar is not complete")
    func lostFrameIsAFailedWrite() throws {
        let root = NSTemporaryDirectory() + "/lost-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recording = RecordingController(
            sources: [SyntheticCamera(id: "cam0", width: 64, height: 48, rate: 30)],
            settings: .init(
                hostId: "rig", root: root, duration: TimeSpan(seconds: 1.5), syncEvery: TimeSpan(seconds: 0.25),
                minFree: ByteSize(bytes: 0)))
        try recording.start()
        let directory = try #require(recording.directory)
        usleep(700_000)
        // The second frame's Cluster ID read back as zeros, as a stale page written back over it
        // would leave it: every frame from there on is unreadable.
        let video = "\(directory)/cam0.mkv"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        let first = try #require(bytes.firstRange(of: Data([0x1F, 0x43, 0xB6, 0x75])))
        let second = try #require(bytes[first.upperBound...].firstRange(of: Data([0x1F, 0x43, 0xB6, 0x75])))
        let handle = try #require(FileHandle(forWritingAtPath: video))
        try handle.seek(toOffset: UInt64(second.lowerBound))
        try handle.write(contentsOf: Data(count: 4))
        try handle.close()
        var reason: RecordingController.StopReason?
        while reason == nil {
            usleep(50_000)
            reason = recording.checkStop()
        }
        let outcome = try recording.stop(reason: reason!)
        let failure = try #require(outcome.writeFailure)
        #expect("\(failure)".contains("lost written data"), "\(failure)")
        let state = try #require(Sidecar.Contents(layout: SessionLayout(directory: directory))?.state)
        #expect(state.hasPrefix("stopped: write failed"), "\(state)")
    }
}
