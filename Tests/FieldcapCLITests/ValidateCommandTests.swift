import Foundation
import SyncField
import Testing

/// Runs the built `fieldcap` binary, as a user would.
struct FieldcapProcess {
    var status: Int32
    var stdout: String
    var stderr: String

    /// The `fieldcap` executable SwiftPM built next to this test bundle, or the one FIELDCAP_TEST_BIN
    /// names: scripts/test gives the release build, whose recordings cost a debug build's CPU
    /// several times over on a 2-core machine running six test processes.
    static var executable: URL {
        if let named = ProcessInfo.processInfo.environment["FIELDCAP_TEST_BIN"], !named.isEmpty {
            return URL(fileURLWithPath: named)
        }
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundleDirectory, bundleDirectory.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("fieldcap")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return bundleDirectory.appendingPathComponent("fieldcap")
    }

    static func run(
        _ arguments: [String], environment: [String: String] = [:], whileRunning: ((Process) -> Void)? = nil
    ) throws -> FieldcapProcess {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        whileRunning?(process)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return FieldcapProcess(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }
}

func makeSession(streams: [String]) throws -> String {
    let path = NSTemporaryDirectory() + "/cli-\(UUID().uuidString)"
    let session = SyncSession(hostId: "rig_01", outputDir: path)
    try session.start()
    for frame in 0..<3 {
        for id in streams { try session.stamp(id, frameNumber: frame) }
    }
    try session.stop()
    return path
}

@Suite("fieldcap validate")
struct ValidateCommandTests {
    @Test("a valid session exits 0 with a summary")
    func validSession() throws {
        let path = try makeSession(streams: ["cam_left", "cam_right"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try FieldcapProcess.run(["validate", path])
        #expect(result.status == 0)
        #expect(result.stdout.contains("valid SyncField 0.1 session, 2 streams, 6 timestamp lines"))
    }

    @Test("a broken session exits 1 and names the file and line")
    func brokenSession() throws {
        let path = try makeSession(streams: ["cam_left", "cam_right"])
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = path + "/cam_left.timestamps.jsonl"
        var text = try String(contentsOfFile: file, encoding: .utf8)
        text = text.replacingOccurrences(
            of: "\"clock_domain\":\"rig_01\",\"clock_source\":\"host_monotonic\",\"frame_number\":2",
            with: "\"clock_domain\":\"other\",\"clock_source\":\"host_monotonic\",\"frame_number\":2")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let result = try FieldcapProcess.run(["validate", path])
        #expect(result.status == 1)
        #expect(
            result.stdout.contains("cam_left.timestamps.jsonl:3: clock_domain \"other\" is not the session's host_id"))
        #expect(result.stdout.contains("1 problem"))
    }

    @Test(
        """
        a recorded session whose video holds more frames than its \
        manifest and timestamp lines say fails, with the numbers
        """
    )
    func videoAheadOfManifest() throws {
        let out = freshPath("validate-video")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let recorded = try FieldcapProcess.run([
            "--cam", "synthetic:160x120@30,id=cam", "--imu", "synthetic:200,id=imu", "--duration", "2s", "--out", out,
            "-q",
        ])
        #expect(recorded.status == 0, "\(recorded.stderr)")
        #expect(try FieldcapProcess.run(["validate", out]).status == 0)
        let stampsPath = out + "/cam.timestamps.jsonl"
        let lines = try String(contentsOfFile: stampsPath, encoding: .utf8).split(separator: "\n")
        let kept = lines.count - 12
        try (lines.prefix(kept).joined(separator: "\n") + "\n").write(
            toFile: stampsPath, atomically: true, encoding: .utf8)
        let manifest = try String(contentsOfFile: out + "/manifest.json", encoding: .utf8)
        try manifest.replacingOccurrences(of: #""frame_count": \#(lines.count),"#, with: #""frame_count": \#(kept),"#)
            .write(toFile: out + "/manifest.json", atomically: true, encoding: .utf8)
        let result = try FieldcapProcess.run(["validate", out])
        #expect(result.status == 1)
        #expect(
            result.stdout.contains(
                "\(out)/manifest.json: streams.cam.frame_count is \(kept) but cam.mkv holds \(lines.count) frames"),
            "\(result.stdout)")
    }

    @Test(
        "a path that is not a directory is one clear line and exit 64",
        arguments: ["/nonexistent/session", "/etc/hostname"])
    func notADirectory(path: String) throws {
        let result = try FieldcapProcess.run(["validate", path])
        #expect(result.status == 64)
        let firstLine = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.contains(path) && firstLine.contains("session directory"))
    }

    @Test("--help teaches what is checked")
    func help() throws {
        let result = try FieldcapProcess.run(["validate", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("capture_ns"))
        #expect(result.stdout.contains("FILE:LINE"))
    }
}
