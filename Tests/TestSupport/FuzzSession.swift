import Foundation

/// Turns fuzzer input into a session directory, so `fieldcap validate` and `recover` can be fed
/// arbitrary files: the input is cut at each `separator` and the pieces become, in order, the
/// files below. Fewer pieces leave the later files missing; an empty piece is an empty file.
/// Shared by the libFuzzer target (Fuzz/) and the test that replays its corpus.
public enum FuzzSession {
    public static let separator: [UInt8] = Array("\n--fieldcap-fuzz--\n".utf8)
    public static let files = [
        "fieldcap.json", "cam.timestamps.jsonl", "cam.frames.ndjson", "cam.mkv", "imu.timestamps.jsonl",
        "imu.jsonl", "manifest.json", "sync_point.json",
    ]

    /// Writes the pieces of `bytes` into `directory` (which must exist and be empty).
    public static func materialize(_ bytes: [UInt8], into directory: String) {
        var pieces: [[UInt8]] = []
        var start = 0
        var index = 0
        while index + separator.count <= bytes.count && pieces.count < files.count - 1 {
            if bytes[index..<(index + separator.count)].elementsEqual(separator) {
                pieces.append(Array(bytes[start..<index]))
                index += separator.count
                start = index
            } else {
                index += 1
            }
        }
        pieces.append(Array(bytes[start...]))
        for (name, piece) in zip(files, pieces) {
            _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(piece))
        }
    }

    /// The formats a Matroska input's first byte picks from (`materializeCamera`).
    public static let cameraFormats = ["GREY", "MJPG", "FFV1", "YUYV", "H264"]
    /// The camera's size in the Matroska target's sessions (the seeds are recorded at it).
    public static let cameraSize = (width: 64, height: 48)

    /// Writes the Matroska target's session into `directory` (existing, empty): a killed recording
    /// of one camera whose video is `bytes` after the first byte, which picks the camera's format
    /// from `cameraFormats`, with a timestamp line for each of the first 64 frames, so that
    /// recover reads and finishes the video rather than cutting it for want of lines. The
    /// sidecar is fixed and valid: the fuzzer's mutations all land in the video.
    public static func materializeCamera(_ bytes: [UInt8], into directory: String) {
        let format = cameraFormats[Int(bytes.first ?? 0) % cameraFormats.count]
        let sidecar = """
            {"state":"recording","host_id":"fuzz","streams":[{"id":"cam","kind":"video","nominal_rate":30,\
            "video_path":"cam.mkv","format":{"width":\(cameraSize.width),"height":\(cameraSize.height),\
            "pixel_format":"\(format)"}}],"sync_point":{"monotonic_ns":1000000000,"wall_clock_ns":1700000000000000000}}
            """
        let lines = (0..<64).map { frame in
            #"{"capture_ns":\#(1_000_000_000 + frame * 33_333_333),"clock_domain":"fuzz","#
                + #""clock_source":"host_monotonic","frame_number":\#(frame),"uncertainty_ns":1000000}"#
        }
        _ = FileManager.default.createFile(atPath: "\(directory)/fieldcap.json", contents: Data(sidecar.utf8))
        _ = FileManager.default.createFile(
            atPath: "\(directory)/cam.timestamps.jsonl", contents: Data(lines.map { $0 + "\n" }.joined().utf8))
        _ = FileManager.default.createFile(atPath: "\(directory)/cam.mkv", contents: Data(bytes.dropFirst()))
    }

    /// The input that materializes as exactly these files (in `files` order; nil stops).
    public static func input(_ pieces: [[UInt8]]) -> [UInt8] {
        Array(pieces.map { $0 }.joined(separator: separator))
    }
}
