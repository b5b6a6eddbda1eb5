import FieldcapCore
import FieldcapEncode
import FieldcapMedia
import FieldcapSession
import Foundation
import SyncField
import Testing

/// Replays an H.264 or HEVC stream that a real encoder wrote (FFmpeg's libx264 or libx265, in
/// Annex B with access unit delimiters, its parameter sets repeated at each I-frame, as the V4L2
/// encoder asks hardware for), one access unit per camera frame, through `AVCFraming`: the framing
/// `V4L2Encoder` hands every coded buffer to. Like a hardware pipeline it holds `delay` frames
/// and gives them at the drain; with `separateHeaders` the first access unit's parameter sets
/// come in a buffer of their own, as an encoder in separate-header mode sends them.
final class AnnexBReplayEncoder: FrameEncoder {
    let encodedFormat: VideoFormat
    var name: String { "replay of \(units.count) access units" }
    var codecPrivate: [UInt8] { framing.codecPrivate ?? [] }
    var isCodecPrivateReady: Bool { framing.codecPrivate != nil }
    private let units: [[UInt8]]
    private let framing: AVCFraming
    private let delay: Int
    private let separateHeaders: Bool
    private var held: [CaptureRecord] = []
    private var next = 0

    init(stream: [UInt8], codec: AVCFraming.Codec, format: VideoFormat, delay: Int = 2, separateHeaders: Bool = false) {
        units = Self.accessUnits(stream, codec: codec)
        framing = AVCFraming(codec)
        encodedFormat = VideoFormat(
            width: format.width, height: format.height, pixelFormat: codec == .h264 ? .h264 : .hevc)
        self.delay = delay
        self.separateHeaders = separateHeaders
    }

    /// The stream cut before each access unit delimiter (H.264 type 9, HEVC type 35).
    static func accessUnits(_ stream: [UInt8], codec: AVCFraming.Codec) -> [[UInt8]] {
        let delimiter: [UInt8] = codec == .h264 ? [0, 0, 0, 1, 0x09] : [0, 0, 0, 1, 0x46]
        var starts: [Int] = []
        for index in 0..<(stream.count - 4) where Array(stream[index..<index + 5]) == delimiter { starts.append(index) }
        return zip(starts, starts.dropFirst() + [stream.count]).map { Array(stream[$0..<$1]) }
    }

    func encode(_ frame: UnsafeRawBufferPointer, record: CaptureRecord, emit: FrameEncoder.Emit) throws {
        held.append(record)
        if held.count > delay { try emitOldest(emit) }
    }

    func drain(emit: FrameEncoder.Emit) throws {
        while !held.isEmpty { try emitOldest(emit) }
    }

    private func emitOldest(_ emit: FrameEncoder.Emit) throws {
        let record = held.removeFirst()
        guard next < units.count else { throw BitstreamError("the replay ran out of access units") }
        var unit = units[next]
        next += 1
        if separateHeaders && next == 1 {
            // Everything before the first picture's slice: delimiter and parameter sets.
            let slice = AnnexBReplayEncoder.firstSlice(unit, codec: framing.codec)
            let header = try Array(unit[..<slice]).withUnsafeBytes { try framing.frame($0, keyframe: true) }
            #expect(header == nil, "a buffer of parameter sets alone is no frame")
            unit = Array(unit[slice...])
        }
        try unit.withUnsafeBytes { bytes in
            if let coded = try framing.frame(bytes, keyframe: false) {
                try emit(EncodedFrame(record: record, bytes: coded.bytes, isKeyframe: coded.isKeyframe))
            }
        }
    }

    /// Where the first picture NAL unit's start code (3 bytes, or 4 with a leading zero) begins.
    static func firstSlice(_ unit: [UInt8], codec: AVCFraming.Codec) -> Int {
        for index in 0..<(unit.count - 3) where unit[index..<index + 3] == [0, 0, 1] {
            let type = codec == .h264 ? unit[index + 3] & 0x1F : (unit[index + 3] >> 1) & 0x3F
            if codec == .h264 ? (1...5).contains(type) : type < 32 {
                return index > 0 && unit[index - 1] == 0 ? index - 1 : index
            }
        }
        return unit.count
    }
}

/// H.264 and HEVC as a hardware encoder gives them, recorded through the recorder, the encoding
/// worker and the session sink, and judged by FFmpeg and GStreamer
/// (Tests/FieldcapCLITests/Clients/avc_check.py). What only real hardware can prove is that its
/// stream is what libx264 and libx265 write here; the V4L2 path that carries it is tested
/// against vicodec in the kernel rig.
@Suite("H.264 and HEVC from a hardware encoder's Annex B stream")
struct HardwareCodecRecordingTests {
    static let checker = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../FieldcapCLITests/Clients/avc_check.py").standardized.path

    /// An Annex B stream of `frames` frames of FFmpeg's test pattern, an I-frame every `keyint`,
    /// no B-frames (fieldcap asks hardware encoders for none: frames leave in capture order).
    static func encoded(_ codec: AVCFraming.Codec, frames: Int = 120, keyint: Int = 10) throws -> String {
        let path = NSTemporaryDirectory() + "annexb-\(UUID().uuidString).\(codec == .h264 ? "h264" : "hevc")"
        let parameters = "keyint=\(keyint):aud=1:repeat-headers=1:bframes=0"
        let encoder =
            codec == .h264
            ? ["-c:v", "libx264", "-preset", "ultrafast", "-x264-params", parameters, "-f", "h264"]
            : [
                "-c:v", "libx265", "-preset", "ultrafast", "-x265-params", parameters + ":log-level=error", "-f",
                "hevc",
            ]
        try run(
            "ffmpeg",
            ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-frames:v", "\(frames)"]
                + encoder + [path])
        return path
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> (passed: Bool, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus == 0, output)
    }

    @Test(
        """
        H.264 and HEVC are stored as avcC/hvcC and length-prefixed NAL units: FFmpeg decodes each \
        frame as the encoder's own stream, keyframes where its I-frames are, GStreamer decodes all
        """,
        arguments: [(AVCFraming.Codec.h264, false), (.h264, true), (.hevc, false)])
    func recordedStreamDecodes(codec: AVCFraming.Codec, separateHeaders: Bool) throws {
        let stream = try Self.encoded(codec)
        defer { try? FileManager.default.removeItem(atPath: stream) }
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: stream)))
        let recorded = try EncodedRecordingTests.record(rate: 30, seconds: 1.5) { format in
            AnnexBReplayEncoder(stream: bytes, codec: codec, format: format, separateHeaders: separateHeaders)
        }
        defer { try? FileManager.default.removeItem(atPath: recorded.directory) }
        #expect(recorded.failure == nil, "\(recorded.failure.map { "\($0)" } ?? "")")
        #expect(recorded.log.count > 20 && recorded.log.count == recorded.summary.written)
        #expect(SessionValidator.validateWithVideos(directory: recorded.directory).isValid)
        let video = SessionLayout(directory: recorded.directory).video("cam")
        let judged = try Self.run("python3", [Self.checker, video, stream, "\(recorded.log.count)"])
        #expect(judged.passed, "\(judged.output)")

        // A file cut short, as a kill leaves it, then salvaged (`fieldcap recover`): every whole
        // frame kept, each still flagged a keyframe only where the encoder's I-frames are, so a
        // player seeks to them and not into a P-frame.
        let salvaged = NSTemporaryDirectory() + "salvaged-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: salvaged) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: video))
        try whole.prefix(whole.count * 4 / 5).write(to: URL(fileURLWithPath: salvaged))
        let kept = try MatroskaSalvage.salvage(
            path: salvaged, format: VideoFormat(width: 160, height: 120, pixelFormat: codec == .h264 ? .h264 : .hevc),
            nominalRate: 30)
        #expect(kept > 10 && kept < recorded.log.count, "\(kept) of \(recorded.log.count) frames kept")
        let salvagedJudged = try Self.run("python3", [Self.checker, salvaged, stream, "\(kept)"])
        #expect(salvagedJudged.passed, "\(salvagedJudged.output)")

        // The judge fails a file that is not the stream it is held against.
        let other = try Self.encoded(codec, keyint: 7)
        defer { try? FileManager.default.removeItem(atPath: other) }
        let wrong = try Self.run("python3", [Self.checker, video, other, "\(recorded.log.count)"])
        #expect(!wrong.passed && wrong.output.contains("FAIL"), "\(wrong.output)")
    }
}
