import Foundation
import Testing

/// `fieldcap export`, judged by the readers its users run (Tests/FieldcapCLITests/Clients/
/// export_check.py: the Python `mcap` library with `mcap-ros2-support`, `rosbags`, ffmpeg for the
/// Matroska side), never by fieldcap's own code.
@Suite("fieldcap export", .serialized)
struct ExportCommandTests {
    let root = NSTemporaryDirectory() + "/export-cli-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    /// A synthetic session with a camera of each format fieldcap records (Y16 as depth when
    /// `--depth` names it, Z16 always depth; MJPEG as a UVC camera gives it) and an IMU.
    func recordSession(_ name: String = "session", seconds: String = "2s", extra: [String] = []) throws -> String {
        let out = "\(root)/\(name)"
        let result = try FieldcapProcess.run(
            [
                "record", "--out", out, "--duration", seconds, "--cam", "synthetic:320x240@30,id=cam0",
                "--cam", "synthetic:160x120@15,id=cam1,format=GREY", "--cam", "synthetic:64x48@10,id=depth0,format=Y16",
                "--cam", "synthetic:96x64@10,id=cam3,format=NV12", "--cam", "synthetic:80x60@10,id=z0,format=Z16",
                "--cam", "synthetic:160x120@15,id=mj,format=MJPG", "--cam", "synthetic:96x64@10,id=bayer,format=GRBG",
                "--imu", "synthetic:200,id=imu0",
            ] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// Runs the independent checker (`export_check.py`, or `folder_check.py` for the folders);
    /// its output, and whether it passed.
    static func judge(
        _ arguments: [String], checker: String = "export_check.py", python: String = "python3"
    ) throws -> (
        passed: Bool, output: String
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, ServeCommandTests.script("Clients/\(checker)")] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus == 0, output)
    }

    func judge(_ arguments: [String]) throws -> (passed: Bool, output: String) { try Self.judge(arguments) }

    func listing() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: root).sorted() }

    @Test(
        """
        MCAP in zstd, lz4 and none and a rosbag2 directory: every frame equals the Matroska file's, \
        every IMU sample and stamp the session's, read by mcap, mcap-ros2-support and rosbags
        """
    )
    func mcapReadByItsReaders() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        let before = try FileManager.default.contentsOfDirectory(atPath: session).sorted()
        for compression in ["zstd", "lz4", "none"] {
            let out = "\(root)/\(compression).mcap"
            let result = try FieldcapProcess.run(
                [
                    "export", session, "--format", "mcap", "--compression", compression, "--depth", "depth0", "--out",
                    out,
                ])
            try #require(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("/depth0/image_raw (sensor_msgs/msg/Image): "), "\(result.stdout)")
            let verdict = try judge(["mcap", session, out, "--depth", "depth0"])
            #expect(verdict.passed, "\(compression): \(verdict.output)")
            #expect(verdict.output.contains("/imu0/imu: "))
            #expect(verdict.output.contains("/cam3/image_raw: "), "\(verdict.output)")
            #expect(verdict.output.contains("/z0/image_raw: "), "\(verdict.output)")
            #expect(verdict.output.contains("/mj/image_raw/compressed: "), "\(verdict.output)")
        }
        let bag = "\(root)/bag"
        let result = try FieldcapProcess.run(["export", session, "--format", "mcap", "--rosbag2", "--out", bag])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: bag).sorted() == ["bag_0.mcap", "metadata.yaml"])
        let verdict = try judge(["rosbag2", session, bag])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("rosbags /cam0/image_raw: "), "\(verdict.output)")
        // The input is never modified.
        #expect(try FileManager.default.contentsOfDirectory(atPath: session).sorted() == before)
        #expect(try listing().filter { $0.hasPrefix(".") }.isEmpty, "nothing hidden left behind")
    }

    @Test("--streams picks streams; a range of a segmented recording holds exactly what `fieldcap extract` takes")
    func streamsAndRange() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let recording = try recordSession("recording", seconds: "4s", extra: ["--segment", "1s"])
        let index =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(recording)/recording.json"))) as? [String: Any]
        let segments = try #require(index?["segments"] as? [[String: Any]])
        try #require(segments.count >= 3)
        // From the middle of the first segment to the middle of the third.
        func utc(_ segment: [String: Any], _ key: String) throws -> String { try #require(segment[key] as? String) }
        let from = try utc(segments[0], "end_utc"), to = try utc(segments[2], "start_utc")
        let extract = "\(root)/extract"
        let extracted = try FieldcapProcess.run(["extract", recording, "--from", from, "--to", to, "--out", extract])
        try #require(extracted.status == 0, "\(extracted.stderr)")
        let out = "\(root)/range.mcap"
        let result = try FieldcapProcess.run(
            [
                "export", recording, "--format", "mcap", "--from", from, "--to", to, "--streams", "cam0,imu0", "--out",
                out,
            ])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.contains("/cam1/"))
        // The extract, less the streams not asked for, is what the export must equal.
        for id in ["cam1", "depth0", "cam3"] {
            for suffix in [".mkv", ".timestamps.jsonl", ".frames.ndjson"] {
                try? FileManager.default.removeItem(atPath: "\(extract)/\(id)\(suffix)")
            }
        }
        var sidecar = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(extract)/fieldcap.json")))
                as? [String: Any])
        sidecar["streams"] = (sidecar["streams"] as? [[String: Any]])?.filter {
            ["cam0", "imu0"].contains($0["id"] as? String)
        }
        try JSONSerialization.data(withJSONObject: sidecar).write(to: URL(fileURLWithPath: "\(extract)/fieldcap.json"))
        let verdict = try judge(["mcap", extract, out])
        #expect(verdict.passed, "\(verdict.output)")
    }

    @Test(
        """
        bad input: a session that does not validate, an unknown format, an output that exists, a \
        range with no data, options of another format, unknown streams: one line each, nothing written
        """
    )
    func badInput() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession(seconds: "1s")
        let broken = "\(root)/broken"
        try FileManager.default.copyItem(atPath: session, toPath: broken)
        let lines = "\(broken)/imu0.timestamps.jsonl"
        var text = try String(contentsOfFile: lines, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"frame_number\":3,", with: "\"frame_number\":3,\"extra\":1,")
        try text.write(toFile: lines, atomically: true, encoding: .utf8)
        try Data().write(to: URL(fileURLWithPath: "\(root)/taken.mcap"))
        let before = try listing()
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["export", broken, "--format", "mcap", "--out", "\(root)/a.mcap"], 1, "does not validate"),
            (["export", session, "--format", "avi", "--out", "\(root)/a.mcap"], 64, "--format avi"),
            (["export", session, "--format", "mcap", "--out", "\(root)/taken.mcap"], 64, "exists"),
            (
                [
                    "export", session, "--format", "mcap", "--from", "2001-01-01T00:00:00Z", "--to",
                    "2001-01-01T00:01:00Z", "--out", "\(root)/a.mcap",
                ], 1, "outside"
            ),
            (["export", session, "--format", "mcap", "--streams", "cam9", "--out", "\(root)/a.mcap"], 64, "cam9"),
            (["export", session, "--format", "mcap", "--depth", "cam0", "--out", "\(root)/a.mcap"], 64, "16-bit"),
            (
                ["export", session, "--format", "mcap", "--compression", "brotli", "--out", "\(root)/a.mcap"], 64,
                "brotli"
            ),
            (["export", "\(root)/nothing", "--format", "mcap", "--out", "\(root)/a.mcap"], 1, "not a directory"),
        ]
        for (arguments, status, says) in cases {
            let result = try FieldcapProcess.run(arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            let errorLines = result.stderr.split(separator: "\n")
            #expect(errorLines.count == 1 && errorLines[0].hasPrefix("Error: "), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(try listing() == before, "\(arguments) left something behind")
        }
    }

    @Test("Ctrl-C during an export exits 130 and leaves no output, finished-looking or not")
    func interrupted() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/big"
        let recorded = try FieldcapProcess.run(
            ["record", "--out", out, "--duration", "3s", "--cam", "synthetic:1280x720@30,id=cam0"])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let before = try listing()
        // Interrupted once it writes (its hidden partial file exists), not after a fixed time: on
        // an idle machine the whole export took less than the 300 ms this test used to wait.
        // zstd, to give the interruption time to land.
        let result = try FieldcapProcess.run(
            ["export", out, "--format", "mcap", "--compression", "zstd", "--out", "\(root)/big.mcap"]
        ) { process in
            for _ in 0..<2000 {
                let partial =
                    (try? FileManager.default.contentsOfDirectory(atPath: root))?
                    .contains { $0.hasPrefix(".big.mcap.partial-") } ?? false
                if partial || !process.isRunning { break }
                usleep(1000)
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(result.status == 130, "\(result.stderr)")
        #expect(result.stderr.contains("stopped"), "\(result.stderr)")
        #expect(try listing() == before)
    }
}
