import Foundation
import Testing

/// `fieldcap record --intrinsics`: a Kalibr camchain, or an OpenCV calibration file written by
/// OpenCV itself (cv2.FileStorage), kept with the session and carried into every export, each
/// export judged by its own readers.
@Suite("fieldcap record --intrinsics", .serialized)
struct IntrinsicsTests {
    let root = NSTemporaryDirectory() + "/intrinsics-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    /// Two cameras as Kalibr writes them: cam0 with its pose relative to the IMU, cam1 fisheye.
    static let camchain = """
        cam0:
          camera_model: pinhole
          intrinsics: [261.6, 260.1, 162.7, 118.0]
          distortion_model: radtan
          distortion_coeffs: [-0.27695497, 0.06712482, 0.00087538, 0.00011556]
          resolution: [320, 240]
          T_cam_imu:
          - [0.0148655429818, -0.999880929698, 0.00414029679422, -0.0216401454975]
          - [0.999557249008, 0.0149672133247, 0.025715529948, -0.064676986768]
          - [-0.0257744366974, 0.00375618835797, 0.999660727178, 0.00981073058949]
          - [0.0, 0.0, 0.0, 1.0]
          timeshift_cam_imu: 0.0012
          rostopic: /cam0/image_raw
        cam1:
          camera_model: pinhole
          intrinsics: [80.5, 80.25, 79.5, 59.5]
          distortion_model: equidistant
          distortion_coeffs: [0.01, -0.002, 0.0003, -0.00004]
          resolution: [160, 120]
          rostopic: /cam1/image_raw

        """

    func write(_ text: String, _ name: String) throws -> String {
        let path = "\(root)/\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func record(_ name: String, _ arguments: [String]) throws -> (status: Int32, stderr: String, out: String) {
        let out = "\(root)/\(name)"
        let result = try FieldcapProcess.run(["record", "--out", out, "--duration", "2s"] + arguments)
        return (result.status, result.stderr, out)
    }

    func sidecar(_ session: String) throws -> [String: Any] {
        try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(session)/fieldcap.json")))
                as? [String: Any])
    }

    @Test(
        """
        A Kalibr camchain matched by id: copied into the session, its values in the sidecar; MCAP gets CameraInfo, \
        EuRoC the pinhole model and T_BS, the image folder the matrix, and the 3D Logger's snippet runs
        """
    )
    func kalibrIntoEveryExport() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let camchain = try write(Self.camchain, "camchain-imucam.yaml")
        let recorded = try record(
            "session",
            [
                "--cam", "synthetic:320x240@30", "--cam", "synthetic:160x120@15,format=GREY", "--imu", "synthetic:200",
                "--intrinsics", camchain,
            ])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let session = recorded.out
        #expect(FileManager.default.contents(atPath: "\(session)/calibration.yaml") == Data(Self.camchain.utf8))
        let document = try sidecar(session)
        let file = try #require(document["calibration_file"] as? [String: Any])
        #expect(file["format"] as? String == "kalibr" && file["match"] as? String == "id")
        let streams = try #require(document["streams"] as? [[String: Any]])
        let cam1 = try #require(streams[1]["calibration"] as? [String: Any])
        #expect(cam1["distortion_model"] as? String == "equidistant")
        #expect(streams[2]["calibration"] == nil, "the IMU has no calibration")
        let validated = try FieldcapProcess.run(["validate", session])
        #expect(validated.status == 0, "\(validated.stdout) \(validated.stderr)")

        let mcap = "\(root)/run.mcap"
        let exported = try FieldcapProcess.run(["export", session, "--format", "mcap", "--out", mcap])
        try #require(exported.status == 0, "\(exported.stderr)")
        var verdict = try ExportCommandTests.judge(["mcap", session, mcap])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("/cam0/camera_info: "), "\(verdict.output)")
        #expect(verdict.output.contains("/cam1/camera_info: "), "\(verdict.output)")

        let euroc = "\(root)/euroc"
        #expect(try FieldcapProcess.run(["export", session, "--format", "euroc", "--out", euroc]).status == 0)
        verdict = try ExportCommandTests.judge(["euroc", session, euroc], checker: "folder_check.py")
        #expect(verdict.passed, "\(verdict.output)")

        let images = "\(root)/images"
        #expect(
            try FieldcapProcess.run([
                "export", session, "--format", "images", "--streams", "cam0,imu0", "--out", images,
            ])
            .status == 0)
        verdict = try ExportCommandTests.judge(
            ["images", session, images, "--streams", "cam0,imu0"], checker: "folder_check.py")
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("the 3D Logger's loading snippet ran"), "\(verdict.output)")
    }

    @Test(
        "An OpenCV file written by cv2.FileStorage, matched by order, in a segmented recording and its extracted range")
    func openCVByOrderThroughSegments() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = "\(root)/opencv.yml"
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        writer.arguments = [
            "python3", "-c",
            """
            import cv2, numpy as np, sys
            fs = cv2.FileStorage(sys.argv[1], cv2.FILE_STORAGE_WRITE)
            fs.write("image_width", 320)
            fs.write("image_height", 240)
            fs.write("camera_matrix", np.array([[270.5, 0, 161.25], [0, 271.0, 119.75], [0, 0, 1]]))
            fs.write("distortion_coefficients", np.array([[-0.3, 0.1, 0.001, -0.002, 0.02]]))
            fs.release()
            """,
            path,
        ]
        try writer.run()
        writer.waitUntilExit()
        try #require(writer.terminationStatus == 0, "cv2 could not write the calibration")
        let recorded = try record(
            "recording",
            ["--cam", "synthetic:320x240@30,id=front", "--segment", "1s", "--intrinsics", "\(path),match=order"])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: recorded.out).filter {
            !$0.hasSuffix(".json")
        }
        try #require(segments.count >= 2)
        for segment in segments {
            let streams = try #require(try sidecar("\(recorded.out)/\(segment)")["streams"] as? [[String: Any]])
            let front = try #require(streams[0]["calibration"] as? [String: Any], "\(segment)")
            #expect(front["intrinsics"] as? [Double] == [270.5, 271.0, 161.25, 119.75])
            #expect(FileManager.default.fileExists(atPath: "\(recorded.out)/\(segment)/calibration.yaml"))
        }
        // The whole recording (extracted into one session on the way) keeps the calibration.
        let mcap = "\(root)/all.mcap"
        let exported = try FieldcapProcess.run(["export", recorded.out, "--format", "mcap", "--out", mcap])
        try #require(exported.status == 0, "\(exported.stderr)")
        #expect(exported.stdout.contains("/front/camera_info (sensor_msgs/msg/CameraInfo)"), "\(exported.stdout)")
    }

    @Test(
        """
        bad --intrinsics: a file that does not parse, a camera not recorded, another \
        resolution, an unknown match: one line before recording, exit 64, nothing written
        """
    )
    func badIntrinsics() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let camchain = try write(Self.camchain, "camchain.yaml")
        let broken = try write("cam0:\n  camera_model: pinhole\n  intrinsics: [1, 2\n", "broken.yaml")
        let omni = try write(Self.camchain.replacingOccurrences(of: "model: pinhole", with: "model: omni"), "omni.yaml")
        let cases: [(arguments: [String], says: String)] = [
            (["--cam", "synthetic:640x480@30", "--intrinsics", camchain], "calibrated at 320x240"),
            (["--cam", "synthetic:320x240@30,id=left", "--intrinsics", camchain], "cam0 is not a recorded camera"),
            (["--cam", "synthetic:320x240@30", "--intrinsics", broken], "broken.yaml"),
            (["--cam", "synthetic:320x240@30", "--intrinsics", omni], "omni"),
            (["--cam", "synthetic:320x240@30", "--intrinsics", "\(root)/none.yaml"], "no such file"),
            (["--cam", "synthetic:320x240@30", "--intrinsics", "\(camchain),match=name"], "match=name"),
        ]
        for (arguments, says) in cases {
            let before = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
            let result = try record("session", arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("--intrinsics"), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).sorted() == before, "\(arguments)")
        }
    }

    @Test(
        """
        fieldcap check --config: the config's intrinsics (beside it) read and matched \
        to the granted sizes; another resolution fails naming the file, nothing recorded
        """
    )
    func checkReadsIntrinsics() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        _ = try write(Self.camchain, "camchain.yaml")
        func config(_ size: String, _ name: String) throws -> String {
            try write(
                """
                output: \(root)/sessions
                min_free: 1M
                intrinsics: camchain.yaml
                cameras:
                  - device: synthetic
                    size: \(size)
                  - device: synthetic
                    size: 160x120

                """, name)
        }
        let good = try FieldcapProcess.run(["check", "--config", try config("320x240", "good.yaml")])
        #expect(good.status == 0, "\(good.stdout)\(good.stderr)")
        #expect(
            good.stdout.contains("ok    intrinsics  \(root)/camchain.yaml (kalibr): cam0, cam1 matched by id"),
            "\(good.stdout)")

        let bad = try FieldcapProcess.run(["check", "--config", try config("640x480", "bad.yaml")])
        #expect(bad.status == 1, "\(bad.stdout)\(bad.stderr)")
        #expect(bad.stdout.contains("FAIL  intrinsics  intrinsics (\(root)/bad.yaml): "), "\(bad.stdout)")
        #expect(bad.stdout.contains("calibrated at 320x240"), "\(bad.stdout)")
        #expect(bad.stdout.contains("ok    cam0"), "the devices are still checked: \(bad.stdout)")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/sessions"), "check must not record")
    }
}
