import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapPreview

@Suite("Preview stream")
struct PreviewStreamTests {
    /// A synthetic camera recorded into nothing, its frames offered to `preview`'s tap.
    func capture(_ preview: PreviewStream, camera: SyntheticCamera) throws -> Recorder {
        var options = Recorder.Options()
        options.frameTaps = [camera.descriptor.id: preview.tap]
        let recorder = Recorder(sources: [camera], sink: DiscardingSink(), options: options)
        try recorder.start()
        return recorder
    }

    @Test("no viewer, no encoding; a viewer gets JPEGs of the camera's newest frames; gone, it stops counting")
    func viewers() async throws {
        let camera = SyntheticCamera(id: "cam", width: 64, height: 48, rate: 60)
        let preview = try PreviewStream(id: "cam", format: camera.format, maxRate: 20, cameraRate: 60)
        defer { preview.close() }
        let recorder = try capture(preview, camera: camera)
        defer { _ = try? recorder.stop() }
        try await Task.sleep(nanoseconds: 300_000_000)
        #expect(preview.statistics.framesEncoded == 0, "encoded frames nobody watched")

        var frames: [PreviewFrame] = []
        for await frame in preview.frames() {
            frames.append(frame)
            if frames.count == 4 { break }
        }
        #expect(frames.map(\.number) == frames.map(\.number).sorted())
        #expect(Set(frames.map(\.sequence)).count == 4)
        #expect(frames.allSatisfy { $0.jpeg.prefix(2) == [0xFF, 0xD8] && $0.jpeg.suffix(2) == [0xFF, 0xD9] })
        #expect(frames.allSatisfy { $0.width == 64 && $0.height == 48 && $0.streamId == "cam" })
        // At most 20 a second by capture time: 50 ms apart, less half a 60 fps frame.
        for (earlier, later) in zip(frames, frames.dropFirst()) {
            #expect(later.captureNs - earlier.captureNs >= 50_000_000 - 8_333_333)
        }
        // The stream left behind (the loop broke) releases its viewer.
        var waited = 0
        while preview.viewerCount > 0 && waited < 100 {
            try await Task.sleep(nanoseconds: 20_000_000)
            waited += 1
        }
        #expect(preview.viewerCount == 0)
        let summary = try recorder.stop()
        #expect(summary[0].dropped == 0)
    }

    @Test("a snapshot is a fresh frame; with no capture it waits, then says there is none")
    func snapshot() async throws {
        let camera = SyntheticCamera(id: "cam", width: 64, height: 48, rate: 30)
        let preview = try PreviewStream(id: "cam", format: camera.format, maxRate: 10)
        defer { preview.close() }
        #expect(await preview.snapshot(maxAge: 1, timeout: 0.3) == nil)
        let recorder = try capture(preview, camera: camera)
        defer { _ = try? recorder.stop() }
        let frame = try #require(await preview.snapshot(maxAge: 1, timeout: 10))
        let path = NSTemporaryDirectory() + "/snapshot-\(UUID().uuidString).jpg"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(frame.jpeg).write(to: URL(fileURLWithPath: path))
        let probe = try runTool(
            "ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
        #expect(probe.output.trimmingCharacters(in: .whitespacesAndNewlines) == "64,48")
    }

    @Test("the hub makes a preview for each camera it can encode and says why not for the others")
    func hub() throws {
        let previews = Previews(cameras: [
            StreamDescriptor(
                id: "cam0", kind: .video, nominalRate: 30, device: "a",
                videoFormat: VideoFormat(width: 64, height: 48, pixelFormat: .yuyv)),
            StreamDescriptor(
                id: "depth", kind: .video, nominalRate: 30, device: "b",
                videoFormat: VideoFormat(width: 64, height: 48, pixelFormat: .y16)),
            StreamDescriptor(id: "imu0", kind: .sensor, nominalRate: 100, device: "c"),
        ])
        defer { previews.close() }
        #expect(Array(previews.streams.keys) == ["cam0"])
        #expect(previews.unavailable["depth"]?.contains("Y16 has no preview") == true)
        #expect(previews.cameraIds == ["cam0", "depth"])
        #expect(Array(previews.taps.keys) == ["cam0"])
    }
}
