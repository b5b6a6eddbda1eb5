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

    /// The input that materializes as exactly these files (in `files` order; nil stops).
    public static func input(_ pieces: [[UInt8]]) -> [UInt8] {
        Array(pieces.map { $0 }.joined(separator: separator))
    }
}
