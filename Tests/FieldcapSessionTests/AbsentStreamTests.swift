import FieldcapArchive
import FieldcapCore
import FieldcapExport
import FieldcapSegments
import FieldcapSession
import FieldcapSyncService
import Foundation
import SyncField
import Testing

/// A camera that goes away during a recording in segments: the segments that close while it is
/// away still hold it, present and empty, and every reader agrees on what that means.
@Suite("A stream absent from a segment")
struct AbsentStreamTests {
    /// A synthetic camera that captures for `seconds`, then ends as an unplugged camera does.
    final class UnpluggedCamera: CaptureSource, @unchecked Sendable {
        let camera: SyntheticCamera
        let seconds: Double
        init(after seconds: Double) {
            camera = SyntheticCamera(id: "cam", width: 64, height: 48, rate: 30)
            self.seconds = seconds
        }
        var descriptor: StreamDescriptor { camera.descriptor }
        func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
            let gone = StopSignal()
            let thread = Thread { [camera] in try? camera.run(into: ring, stop: gone) }
            thread.start()
            let until = Date().addingTimeInterval(seconds)
            while !stop.isRequested && Date() < until { usleep(1000) }
            gone.request()
            while !thread.isFinished { usleep(1000) }
            if !stop.isRequested {
                throw DeviceError(
                    code: .gone, device: "/dev/video9", operation: "VIDIOC_DQBUF", errno: ENODEV,
                    hint: "the device was unplugged")
            }
        }
        func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? { camera.frameBytes(of: record) }
        func releaseBuffer(_ index: Int32) { camera.releaseBuffer(index) }
    }

    @Test(
        """
        a camera gone after the first segment: the later segments link its video with no frame and \
        no timestamps file, validate, and request, export and extract read them as recording nothing
        """
    )
    func cameraGone() async throws {
        let root = NSTemporaryDirectory() + "absent-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recording = RecordingController(
            sources: [UnpluggedCamera(after: 0.5), SyntheticIMU(id: "imu", rate: 100)],
            settings: .init(
                hostId: "rig", root: root, duration: TimeSpan(seconds: 3.2), minFree: ByteSize(bytes: 0),
                segments: SegmentedSessions.Settings(lengthNs: 1_000_000_000, budget: StorageBudget())))
        try recording.start()
        let directory = try #require(recording.directory)
        var reason: RecordingController.StopReason?
        // Asleep between looks, not blocking: the tests share the cooperative pool's threads.
        while reason == nil {
            try await Task.sleep(for: .milliseconds(20))
            reason = recording.checkStop()
        }
        _ = try recording.stop(reason: reason!)
        let index = try #require(RecordingIndex.read(directory: directory))
        try #require(index.segments.count >= 3)
        #expect(index.segments[0].streams?["cam"]?.records ?? 0 > 0)
        for segment in index.segments {
            let path = "\(directory)/\(segment.directory)"
            let report = SessionValidator.validateWithVideos(directory: path)
            #expect(report.isValid, "\(segment.directory): \(report.problems)")
            let source = try SessionSource(directory: path)
            let export = try ExportSession(directory: path)
            let camera = try #require(export.streams.first { $0.id == "cam" })
            guard segment.number > 1 else {
                #expect(source.absentStreams.isEmpty && source.streams.map(\.id).contains("cam"))
                let sidecar = try #require(
                    JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: "\(path)/fieldcap.json"))))
                let entry = try #require(sidecar["streams"]?.arrayValue?.first { $0["id"]?.stringValue == "cam" })
                #expect((entry["ended_early_at"]?["seconds_after_start"]?.doubleValue ?? -1) > 0, "\(entry)")
                #expect(!camera.recordedNothing)
                continue
            }
            #expect(segment.streams?["cam"]?.records == 0)
            // Its sidecar says why: the camera ended before this segment began.
            let sidecar = try #require(
                JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: "\(path)/fieldcap.json"))))
            let entry = try #require(sidecar["streams"]?.arrayValue?.first { $0["id"]?.stringValue == "cam" })
            #expect(entry["ended_early"]?.stringValue?.contains("unplugged") == true, "\(entry)")
            let endedNs = try #require(entry["ended_early_at"]?["monotonic_raw_ns"]?.uint64Value)
            #expect(
                endedNs < segment.startMonotonicRawNs, "ended \(endedNs), segment from \(segment.startMonotonicRawNs)")
            #expect(source.absentStreams == ["cam"] && source.streams.map(\.id) == ["imu"])
            #expect(camera.recordedNothing)
            #expect(!FileManager.default.fileExists(atPath: "\(path)/cam.timestamps.jsonl"))
        }
        // The request names why it has nothing to align to.
        let later = "\(directory)/\(index.segments[1].directory)"
        #expect(throws: SyncRequestError.noVideo(absent: ["cam"])) {
            try SyncRequest(sessions: [SessionSource(directory: later)])
        }
        // A range across the gap: the camera's frames of the first segment, nothing after.
        let clip = "\(root)/clip"
        let outcome = try RangeExtractor.extract(.init(source: directory, fromNs: 0, toNs: UInt64.max / 2, out: clip))
        #expect(outcome.report.isValid, "\(outcome.report.problems)")
        #expect(outcome.records.first { $0.id == "cam" }?.count == index.segments[0].streams?["cam"]?.records)

        // An export of a segment the camera was away for holds the camera with no frame.
        var mcap = SessionExporter.Request(source: later, format: .mcap, out: "\(root)/later.mcap")
        mcap.compression = .none
        let exported = try SessionExporter.export(mcap)
        #expect(exported.lines.contains { $0.contains("/cam/") && $0.contains(": 0 messages") }, "\(exported.lines)")

        // Damage: a later segment's video holding frames without their lines is not an absence:
        // validate refuses it, and request and extract do not pass over its frames.
        try FileManager.default.removeItem(atPath: "\(later)/cam.mkv")
        try FileManager.default.copyItem(
            atPath: "\(directory)/\(index.segments[0].directory)/cam.mkv", toPath: "\(later)/cam.mkv")
        #expect(!AbsentStream.recordedNothing(directory: later, id: "cam"))
        let damaged = SessionValidator.validateWithVideos(directory: later)
        #expect(damaged.problems.contains { $0.message.contains("the manifest lists no timestamps file") })
        #expect(throws: SyncRequestError.self) { try SessionSource(directory: later) }
        #expect(throws: (any Error).self) {
            try RangeExtractor.extract(.init(source: directory, fromNs: 0, toNs: UInt64.max / 2, out: "\(root)/clip2"))
        }
    }
}
