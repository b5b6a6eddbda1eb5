import FieldcapCore
import FieldcapEncode
import FieldcapMedia
import FieldcapSession
import Foundation
import SyncField
import Testing

/// libjpeg-turbo's encoder made slower than the camera: each frame takes `delayMs` more.
final class SlowJPEGEncoder: FrameEncoder {
    let inner: JPEGEncoder
    let delayMs: UInt32
    var encodedFormat: VideoFormat { inner.encodedFormat }
    var name: String { "slow " + inner.name }
    let failAfter: Int?
    private var encoded = 0

    struct Broken: Error, CustomStringConvertible { var description: String { "the encoder stopped answering" } }

    init(format: VideoFormat, delayMs: UInt32, failAfter: Int? = nil) throws {
        inner = try JPEGEncoder(format: format, quality: 85)
        self.delayMs = delayMs
        self.failAfter = failAfter
    }

    func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        if let failAfter, encoded == failAfter { throw Broken() }
        usleep(delayMs * 1000)
        try inner.encode(frame, record: record, emit: emit)
        encoded += 1
    }

    func drain(emit: FrameEncoder.Emit) throws {}
}

/// Recordings whose cameras are encoded (`encode=jpeg`), through the recorder and the session
/// sink as `fieldcap record` drives them.
@Suite("Encoded recordings")
struct EncodedRecordingTests {
    struct Recorded {
        var directory: String
        var summary: Recorder.StreamSummary
        /// The frame log's lines: frame number and sequence number.
        var log: [(frameNumber: Int, sequence: UInt64)]
        var failure: Error?
    }

    /// Records one synthetic camera through `encoder` for `seconds`, and what the session holds.
    static func record(
        rate: Double, seconds: Double, encoder: @escaping (VideoFormat) throws -> FrameEncoder
    ) throws -> Recorded {
        let directory = NSTemporaryDirectory() + "encoded-\(UUID().uuidString)"
        let session = SyncSession(hostId: "rig", outputDir: directory)
        try session.start()
        let sink = VideoSessionSink(
            session: session, encodings: ["cam": .jpeg(quality: 85)],
            makeEncoder: { try encoder($0.captured) })
        let camera = SyntheticCamera(id: "cam", width: 160, height: 120, rate: rate, bufferCount: 4)
        let recorder = Recorder(sources: [camera], sink: sink)
        try recorder.start()
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && !recorder.hasFailed { usleep(20_000) }
        var failure: Error?
        do { try recorder.stop() } catch { failure = error }
        let text = try String(contentsOfFile: SessionLayout(directory: directory).frameLog("cam"), encoding: .utf8)
        let log = try text.split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (
                frameNumber: try #require(object["frame_number"] as? Int),
                sequence: UInt64(try #require(object["sequence"] as? Int))
            )
        }
        return Recorded(directory: directory, summary: recorder.finalSummary[0], log: log, failure: failure)
    }

    @Test(
        """
        an encoder slower than the camera drops frames for the reason \
        encoder, not capture's, and the numbers stay the video's
        """
    )
    func slowEncoderDropsItsOwn() throws {
        // 200 frames a second against an encoder that takes 20 ms a frame: at most a quarter fit.
        let recorded = try Self.record(rate: 200, seconds: 1.5) { try SlowJPEGEncoder(format: $0, delayMs: 20) }
        defer { try? FileManager.default.removeItem(atPath: recorded.directory) }
        #expect(recorded.failure == nil)
        let summary = recorded.summary
        // Capture keeps up (on a quiet machine it drops none); beside a CPU hog the writer that
        // hands the camera its buffers back can be late, and the ring loses a frame or two of
        // 300 (seen: 1), never the encoder's share.
        #expect(
            summary.dropped <= 6 && summary.dropped < summary.encoderDropped,
            "capture dropped \(summary.dropped), the encoder \(summary.encoderDropped)")
        #expect(
            summary.encoderDropped > summary.written, "\(summary.written) written, \(summary.encoderDropped) dropped")
        #expect(recorded.log.map(\.frameNumber) == Array(0..<summary.written))
        // Every sequence number is written, dropped by the encoder or lost by capture's ring,
        // exactly one of the three.
        let written = Set(recorded.log.map(\.sequence))
        var dropped = Set<UInt64>()
        for run in summary.encoderDroppedRuns { dropped.formUnion(run) }
        var lost = Set<UInt64>()
        for run in summary.droppedRuns { lost.formUnion(run) }
        #expect(written.isDisjoint(with: dropped) && written.isDisjoint(with: lost) && dropped.isDisjoint(with: lost))
        let all = written.union(dropped).union(lost)
        #expect(all == Set(0...(all.max() ?? 0)))
        #expect(summary.encoderDropped == dropped.count)
        #expect(summary.dropped == lost.count)
        let report = SessionValidator.validateWithVideos(directory: recorded.directory)
        #expect(report.isValid, "\(report.problems)")
        #expect(
            try MatroskaScan(path: SessionLayout(directory: recorded.directory).video("cam")).frames.count
                == summary.written)
    }

    @Test(
        """
        an encoder that fails mid-stream ends the recording as a \
        failed write does: every frame encoded before it is kept
        """
    )
    func failingEncoderEndsTheRecording() throws {
        let recorded = try Self.record(rate: 30, seconds: 10) {
            try SlowJPEGEncoder(format: $0, delayMs: 0, failAfter: 12)
        }
        defer { try? FileManager.default.removeItem(atPath: recorded.directory) }
        #expect("\(recorded.failure.map { "\($0)" } ?? "no error")" == "the encoder stopped answering")
        #expect(recorded.log.count == 12)
        #expect(SessionValidator.validateWithVideos(directory: recorded.directory).isValid)
    }
}
