import FieldcapSegments
import Foundation
import SyncField
import Testing

/// Writes `text` as a config file and returns its path (in a fresh directory).
private func writeConfig(_ text: String) throws -> String {
    let directory = freshPath("rig")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let path = "\(directory)/rig.yaml"
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
}

/// The repository's top folder (this file is Tests/FieldcapCLITests/...).
private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

@Suite("rig config, fieldcap check, install-udev")
struct RigConfigCommandTests {
    @Test("--config records the rig it describes: host id, output root, devices with their options, storage limit")
    func recordsConfig() throws {
        let root = freshPath("root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try writeConfig(
            """
            # a test rig
            host_id: rig_yaml
            output: \(root)
            min_free: 1M
            duration: 1s
            cameras:
              - device: synthetic
                id: cam_left
                size: 160x120
                fps: 15
            imus:
              - device: synthetic
                rate: 100
            """)
        let result = try FieldcapProcess.run(["--config", config, "-q"])
        #expect(result.status == 0, "\(result.stderr)")
        let sessions = try FileManager.default.contentsOfDirectory(atPath: root)
        try #require(sessions.count == 1, "\(sessions)")
        #expect(sessions[0].hasPrefix("rig_yaml-"))
        let session = "\(root)/\(sessions[0])"
        #expect(SessionValidator.validate(directory: session).problems.isEmpty)
        let info = try sidecar(session)
        #expect(info["host_id"] as? String == "rig_yaml")
        let streams = (info["streams"] as! [[String: Any]]).map { $0["id"] as! String }
        #expect(streams == ["cam_left", "imu0"])
        let frames = try String(contentsOfFile: "\(session)/cam_left.timestamps.jsonl", encoding: .utf8).split(
            separator: "\n"
        ).count
        #expect(frames >= 10 && frames <= 30, "15 fps for 1 s: \(frames)")
    }

    @Test("a config's segment, max_storage and keep record in segments within that budget")
    func recordsSegmentsFromConfig() throws {
        let root = freshPath("root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let config = try writeConfig(
            "output: \(root)\nduration: 2500ms\nsegment: 1s\nmax_storage: 50M\n"
                + "keep: 2h\nimus:\n  - device: synthetic\n    rate: 100\n"
        )
        let result = try FieldcapProcess.run(["--config", config, "-q"])
        #expect(result.status == 0, "\(result.stderr)")
        let recordings = try FileManager.default.contentsOfDirectory(atPath: root)
        try #require(recordings.count == 1)
        let index = try #require(RecordingIndex.read(directory: "\(root)/\(recordings[0])"))
        #expect(index.segmentSeconds == 1 && index.maxStorageBytes == 50 << 20 && index.keepSeconds == 7200)
        #expect(index.segments.count >= 2 && index.state == "complete")
        // Too small a budget from the config is refused as the command line's is, naming the file.
        let tiny = try writeConfig(
            "output: \(root)\nsegment: 10s\nmax_storage: 1k\ncameras:\n  - device: synthetic\n    size: 640x480\n")
        let refused = try FieldcapProcess.run(["--config", tiny, "-q"])
        #expect(refused.status == 64)
        #expect(
            refused.stderr.hasPrefix("Error: max_storage (\(tiny)) 1.0k is less than one 10s segment"),
            "\(refused.stderr)")
    }

    @Test("options on the command line win over the file's")
    func commandLineWins() throws {
        let out = freshPath("out")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let config = try writeConfig("host_id: from_file\nduration: 1h\nimus:\n  - device: synthetic\n    rate: 50\n")
        let result = try FieldcapProcess.run([
            "--config", config, "--host-id", "from_flag", "--duration", "500ms", "--out", out, "-q",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try sidecar(out)["host_id"] as? String == "from_flag")
    }

    /// Each bad config: the line its error must name, and what the message must say.
    static let badConfigs: [(yaml: String, line: Int?, says: String)] = [
        ("cameras:\n  - device: synthetic\n    fpss: 30\n", 3, "unknown key 'fpss' in a camera; did you mean 'fps'?"),
        ("cameras:\n  - device: synthetic\n    size: 12x\n", 3, "size '12x'"),
        ("cameras:\n  - device: synthetic\n    fps: 0\n", 3, "fps '0'"),
        ("imus:\n  - device: synthetic\n    rate: -5\n", 3, "rate '-5'"),
        ("host_id: ok\n\nimus:\n  - device: iio:device0\n    clock: wall\n", 5, "clock 'wall'"),
        ("imus:\n  - device: iio:device0\n    channels: [accel, \"\"]\n", 3, "channels"),
        ("cameras:\n  - device: /dev/video0\n    format: H265\n", 3, "format 'H265'"),
        (
            "cameras:\n  - device: /dev/video0\n    controls:\n      gain: loud\n", 4,
            "a control's value is a whole number"
        ),
        ("cameras:\n  - device: /dev/video0\n    stall: 1ms\n", 3, "stall '1ms'"),
        ("cameras:\n  - id: cam\n", 2, "needs 'device:'"),
        ("cameras:\n  device: synthetic\n", 1, "cameras must be a list"),
        ("host_id: a/b\nimus:\n  - device: synthetic\n", 1, "host_id 'a/b'"),
        ("min_free: lots\nimus:\n  - device: synthetic\n", 1, "min_free 'lots'"),
        ("duration: forever\nimus:\n  - device: synthetic\n", 1, "duration 'forever'"),
        ("ouput: /tmp\nimus:\n  - device: synthetic\n", 1, "did you mean 'output'?"),
        (
            "imus:\n  - device: synthetic\n    id: imu\n  - device: synthetic\n    id: imu\n", 4,
            "stream id 'imu' is used twice"
        ),
        ("imus:\n  - device: synthetic\n    id: a/b\n", 2, "stream id 'a/b'"),
        ("imus:\n  - device: synthetic\n    rate: 100\n    rate: 200\n", 3, "'rate' given twice"),
        ("imus:\n  - device: synthetic\n   rate: 100\n", 3, "not valid YAML"),
        ("imus: [\n", 2, "not valid YAML"),
        ("max_storage: 1G\nimus:\n  - device: synthetic\n", 1, "max_storage needs segment"),
        ("keep: 2h\nimus:\n  - device: synthetic\n", 1, "keep needs segment"),
        ("segment: often\nimus:\n  - device: synthetic\n", 1, "segment 'often'"),
        ("segment: 5s\nmax_storage: 0\nimus:\n  - device: synthetic\n", 2, "max_storage 0 would keep nothing"),
        ("segment: 5s\nkeep: never\nimus:\n  - device: synthetic\n", 2, "keep 'never'"),
        ("host_id: rig\n", nil, "no cameras, imus or sensors"),
        ("cameras: []\n", nil, "no cameras, imus or sensors"),
        ("sensors:\n  - device: feed:grip\n    rate: fast\n", 3, "rate 'fast'"),
        ("sensors:\n  - device: feed:grip\n    socket: grip.sock\n", 3, "must be an absolute path"),
        ("sensors:\n  - device: gps0\n", 2, "a sensor is feed:NAME"),
        ("sensors:\n  - device: feed:grip\n    fps: 3\n", 3, "unknown key 'fps' in a sensor"),
    ]

    @Test("a bad config: one line naming the file and line, exit 64, no session", arguments: 0..<badConfigs.count)
    func badConfig(index: Int) throws {
        let (yaml, line, says) = Self.badConfigs[index]
        let root = freshPath("root")
        let config = try writeConfig("output: \(root)\n" + yaml)
        for arguments in [["--config", config], ["check", "--config", config]] {
            let result = try FieldcapProcess.run(arguments)
            #expect(result.status == 64, "\(arguments) on\n\(yaml)\n\(result.stderr)")
            let firstLine = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
            // The file's first line is `output:`, so the YAML above starts at line 2.
            let expected = line.map { "\(config):\($0 + 1): " } ?? "\(config): "
            #expect(firstLine.hasPrefix("Error: \(expected)"), "\(firstLine)")
            #expect(firstLine.contains(says), "\(firstLine)")
            #expect(!FileManager.default.fileExists(atPath: root))
        }
    }

    @Test("a config that is missing, a directory, empty or a list, and --config with --cam: clear errors")
    func unusableConfig() throws {
        let missing = try FieldcapProcess.run(["--config", "/nonexistent/rig.yaml"])
        #expect(
            missing.status == 64 && missing.stderr.contains("/nonexistent/rig.yaml: no such file"), "\(missing.stderr)")
        let directory = try FieldcapProcess.run(["check", "--config", NSTemporaryDirectory()])
        #expect(directory.status == 64 && directory.stderr.contains("is a directory"), "\(directory.stderr)")
        let empty = try writeConfig("# nothing but a comment\n")
        let emptyResult = try FieldcapProcess.run(["--config", empty])
        #expect(emptyResult.status == 64 && emptyResult.stderr.contains("\(empty): is empty"), "\(emptyResult.stderr)")
        let list = try writeConfig("- just\n- a list\n")
        let listResult = try FieldcapProcess.run(["check", "--config", list])
        #expect(
            listResult.status == 64
                && listResult.stderr.contains("\(list):1: the config must be a block of 'key: value' lines"),
            "\(listResult.stderr)")
        let config = try writeConfig("imus:\n  - device: synthetic\n")
        let both = try FieldcapProcess.run(["--config", config, "--cam", "synthetic"])
        #expect(both.status == 64 && both.stderr.contains("either --config or --cam/--imu"), "\(both.stderr)")
    }

    @Test(
        """
        check: every device set up as asked and shown, storage checked, \
        no session made; a missing device fails naming its line
        """
    )
    func check() throws {
        let root = freshPath("root")
        let good = try writeConfig(
            """
            output: \(root)
            min_free: 1M
            cameras:
              - device: synthetic
                size: 320x240
                fps: 30
            imus:
              - device: synthetic
                rate: 400
            """)
        let result = try FieldcapProcess.run(["check", "--config", good])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for text in [
            "ok    cam0  synthetic: moving test pattern, YUYV 320x240, 30 fps", "ok    imu0  synthetic: accel_x",
            "400 Hz", "ok    storage  \(root)", "ready:",
        ] {
            #expect(result.stdout.contains(text), "\(result.stdout)")
        }
        #expect(!FileManager.default.fileExists(atPath: root), "check must not record")

        let bad = try writeConfig(
            """
            output: \(root)
            imus:
              - device: synthetic
            cameras:
              - device: /dev/fieldcap-no-such-camera
                id: left
            """)
        let failed = try FieldcapProcess.run(["check", "--config", bad])
        #expect(failed.status == 1, "\(failed.stdout)\(failed.stderr)")
        #expect(
            failed.stdout.contains("FAIL  left  \(bad):5: camera /dev/fieldcap-no-such-camera: open: No such file"),
            "\(failed.stdout)")
        #expect(failed.stdout.contains("ok    imu0"), "the other devices are still checked: \(failed.stdout)")
        #expect(failed.stderr.contains("1 problem(s)"), "\(failed.stderr)")

        let full = try writeConfig("output: \(root)\nmin_free: 1T\nimus:\n  - device: synthetic\n")
        let tooFull = try FieldcapProcess.run(["check", "--config", full])
        #expect(tooFull.status == 1 && tooFull.stdout.contains("FAIL  storage"), "\(tooFull.stdout)")
    }

    @Test("install-udev --print gives exactly udev/70-fieldcap.rules, the file the binary embeds")
    func installUdev() throws {
        let result = try FieldcapProcess.run(["install-udev", "--print"])
        #expect(result.status == 0)
        let file = try String(contentsOf: repository.appendingPathComponent("udev/70-fieldcap.rules"), encoding: .utf8)
        #expect(result.stdout == file)
        #expect(file.contains("GROUP=\"fieldcap\""))
    }

    @Test(
        """
        the example config in deploy/ is one `fieldcap check` reads \
        (its devices are a real rig's, so they are absent here)
        """
    )
    func exampleConfigParses() throws {
        let result = try FieldcapProcess.run([
            "check", "--config", repository.appendingPathComponent("deploy/rig.yaml").path,
        ])
        // Exit 1 (devices missing), not 64 (a config error).
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("FAIL  cam_left"), "\(result.stdout)")
    }
}
