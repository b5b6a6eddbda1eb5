import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

@Suite("Synthetic recording with video files")
struct SyntheticRecordingTests {
    @Test("two synthetic cameras and an IMU: the session validates and each video holds exactly its stamped frames")
    func camerasAndIMU() throws {
        let path = NSTemporaryDirectory() + "/synthetic-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        try session.start()
        let sources: [CaptureSource] = [
            SyntheticCamera(id: "cam_left", width: 320, height: 240, rate: 30),
            SyntheticCamera(id: "cam_right", width: 320, height: 240, rate: 30),
            SyntheticIMU(id: "imu", rate: 500),
        ]
        let recorder = Recorder(sources: sources, sink: VideoSessionSink(session: session))
        try recorder.start()
        usleep(1_000_000)
        let summary = try recorder.stop()
        #expect(summary.allSatisfy { $0.written > 0 && $0.captureError == nil }, "\(summary)")

        let report = SessionValidator.validate(directory: path)
        #expect(report.problems.isEmpty, "\(report.problems)")
        let manifest = try String(contentsOfFile: path + "/manifest.json", encoding: .utf8)
        for camera in ["cam_left", "cam_right"] {
            let stamped = summary.first { $0.id == camera }!.written
            #expect(
                manifest.contains(#""path": "\#(path.replacingOccurrences(of: "/", with: "\\/"))\/\#(camera).mkv""#))
            let probe = try runTool(
                "ffprobe",
                [
                    "-v", "error", "-count_frames", "-show_entries",
                    "stream=codec_name,pix_fmt,width,height,nb_read_frames",
                    "-of", "default=noprint_wrappers=1", "\(path)/\(camera).mkv",
                ])
            #expect(probe.output.contains("codec_name=rawvideo") && probe.output.contains("pix_fmt=yuyv422"))
            #expect(probe.output.contains("width=320") && probe.output.contains("height=240"))
            #expect(
                probe.output.contains("nb_read_frames=\(stamped)"),
                "\(camera): \(stamped) stamped; ffprobe: \(probe.output)")
            // frame_number is the frame's index in the video file: 0, 1, 2, ... without gaps.
            let lines = try String(contentsOfFile: "\(path)/\(camera).timestamps.jsonl", encoding: .utf8).split(
                separator: "\n")
            for (index, line) in lines.enumerated() {
                #expect(line.contains(#""frame_number":\#(index),"#))
            }
            // The frame log holds every value of each frame's timestamp line, for recover to
            // write back the lines a power cut took.
            let logged = try String(contentsOfFile: "\(path)/\(camera).frames.ndjson", encoding: .utf8).split(
                separator: "\n")
            #expect(logged.count == lines.count)
            for (stamp, log) in zip(lines, logged) {
                let stampFields = try JSONSerialization.jsonObject(with: Data(stamp.utf8)) as! [String: Any]
                let logFields = try JSONSerialization.jsonObject(with: Data(log.utf8)) as! [String: Any]
                for key in ["capture_ns", "frame_number", "uncertainty_ns"] {
                    #expect(
                        (stampFields[key] as? NSNumber) == (logFields[key] as? NSNumber),
                        "\(camera) \(key): \(stamp) vs \(log)")
                }
            }
        }
    }
}
