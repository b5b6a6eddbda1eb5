import FieldcapCore
import FieldcapMedia
import FieldcapSegments
import Foundation
import Testing

@testable import FieldcapSession

/// The segment a killed recorder had opened ahead: recover removes it, and the storage budget and
/// `sessions rm` may delete a finished one, only when it holds nothing but what fieldcap makes
/// there, the calibration of a recording made with --intrinsics among it (#42).
@Suite("a segment opened ahead: what recover removes, what the budget may delete")
struct SegmentOpenedAheadTests {
    static let streams = [
        RecordingIndex.Stream(id: "cam", kind: "video", device: "synthetic", nominalRate: 30, format: "64x48 GREY"),
        RecordingIndex.Stream(id: "imu", kind: "sensor", device: "synthetic", nominalRate: 200, format: nil),
    ]

    /// A segment as the recorder opens it ahead: its sidecar, the calibration, the camera's video
    /// with its header and track (and `frames` frames), an empty frame log.
    static func segment(frames: Int = 0) throws -> SessionLayout {
        let path = NSTemporaryDirectory() + "/ahead-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let layout = SessionLayout(directory: path)
        try Data("{}".utf8).write(to: URL(fileURLWithPath: layout.sidecar))
        try Data("cam0: {}\n".utf8).write(to: URL(fileURLWithPath: "\(path)/\(SessionCalibration.fileName)"))
        let writer = try MatroskaWriter(
            path: layout.video("cam"), format: VideoFormat(width: 64, height: 48, pixelFormat: .grey), nominalRate: 30,
            directIO: false)
        let frame = [UInt8](repeating: 7, count: 64 * 48)
        for index in 0..<frames {
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 33_333_333) }
        }
        try writer.finish()
        try Data().write(to: URL(fileURLWithPath: layout.frameLog("cam")))
        return layout
    }

    @Test("a calibrated recording's segment opened ahead is removed by recover, and the budget may delete it")
    func calibrationIsTheRecorders() throws {
        let layout = try Self.segment()
        defer { try? FileManager.default.removeItem(atPath: layout.directory) }
        #expect(RecordingRecovery.neverWritten(layout, streams: Self.streams))
        #expect(SessionFiles.stranger(in: layout.directory, streams: Self.streams.map(\.id)) == nil)
    }

    @Test("its header damaged by a power cut (zeros): still nothing a line accounts for, removed")
    func damagedHeader() throws {
        let layout = try Self.segment()
        defer { try? FileManager.default.removeItem(atPath: layout.directory) }
        let size = try Data(contentsOf: URL(fileURLWithPath: layout.video("cam"))).count
        try Data(count: size).write(to: URL(fileURLWithPath: layout.video("cam")))
        #expect(RecordingRecovery.neverWritten(layout, streams: Self.streams))
    }

    @Test("a file of the user's, or frames in its video, keep it")
    func userFilesAndFramesStay() throws {
        let withNotes = try Self.segment()
        defer { try? FileManager.default.removeItem(atPath: withNotes.directory) }
        try Data("mine".utf8).write(to: URL(fileURLWithPath: "\(withNotes.directory)/notes.txt"))
        #expect(!RecordingRecovery.neverWritten(withNotes, streams: Self.streams))
        #expect(SessionFiles.stranger(in: withNotes.directory, streams: Self.streams.map(\.id)) == "notes.txt")

        let withFrames = try Self.segment(frames: 3)
        defer { try? FileManager.default.removeItem(atPath: withFrames.directory) }
        #expect(!RecordingRecovery.neverWritten(withFrames, streams: Self.streams))
    }
}
