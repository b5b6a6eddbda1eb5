import Foundation
import TestSupport
import Testing

/// `fieldcap check-sync` on recordings whose truth is known: synthetic cameras that see a textured
/// wall turned by hand with their stamps late by a chosen delay, and a synthetic IMU whose gyroscope
/// reads the same turning (`motion=hand`, `delay=`).
@Suite("fieldcap check-sync", .serialized)
struct CheckSyncCommandTests {
    let root = NSTemporaryDirectory() + "/check-sync-cli-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    /// The pairs of what `check-sync --json` printed.
    static func pairs(_ result: FieldcapProcess) throws -> [[String: Any]] {
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "\(result.stdout)\(result.stderr)")
        return try #require(printed["pairs"] as? [[String: Any]], "\(result.stdout)")
    }

    func record(_ name: String, _ devices: [String], seconds: String) throws -> String {
        let out = "\(root)/\(name)"
        let result = try FieldcapProcess.run(["record", "--out", out, "--duration", seconds] + devices)
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// cam0's and cam2's calibration, as Kalibr writes it: the synthetic camera's focal length,
    /// and time shifts (t_imu = t_cam + timeshift_cam_imu, the negative of the offset): cam0's the
    /// one its stamps were given, cam2's of the other sign.
    static let camchain = """
        cam0:
          camera_model: pinhole
          intrinsics: [138.6, 138.6, 79.5, 59.5]
          distortion_model: radtan
          distortion_coeffs: [0, 0, 0, 0]
          resolution: [160, 120]
          timeshift_cam_imu: -0.0075
        cam2:
          camera_model: pinhole
          intrinsics: [138.6, 138.6, 79.5, 59.5]
          distortion_model: radtan
          distortion_coeffs: [0, 0, 0, 0]
          resolution: [160, 120]
          timeshift_cam_imu: 0.0075

        """

    /// ns: the accuracy a recording through `fieldcap record` is held to (the estimate's own
    /// error on these is under 0.2 ms; the frames' stamps are the render's exactly).
    static let tolerance = 1_000_000.0

    @Test(
        """
        the offset of each camera against the IMU is the delay its stamps were given, within 1 ms, \
        at 30 fps (grey, with intrinsics; a delay off the 1 ms grid) and 60 fps (YUYV, without); \
        a calibration's time shift of the right sign passes, the other sign is warned about
        """
    )
    func measuresTheDelays() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let camchain = "\(root)/camchain-imucam.yaml"
        try Self.camchain.write(toFile: camchain, atomically: true, encoding: .utf8)
        let session = try record(
            "turned",
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=hand,delay=7.5ms",
                "--cam", "synthetic:160x120@60,id=cam1,format=YUYV,motion=hand,delay=-20ms",
                "--cam", "synthetic:160x120@30,id=cam2,format=GREY,motion=hand,delay=7.3ms",
                "--imu", "synthetic:400,id=imu0,motion=hand", "--intrinsics", camchain,
            ], seconds: "4s")
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200", "--json", "--save"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let printed = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout)")
        let pairs = try #require(printed["pairs"] as? [[String: Any]], "\(result.stdout)")
        #expect(pairs.map { "\($0["camera"]!)-\($0["imu"]!)" } == ["cam0-imu0", "cam1-imu0", "cam2-imu0"])
        let truths: [Double] = [7_500_000, -20_000_000, 7_300_000]
        for (pair, delayNs) in zip(pairs, truths) {
            let alignment = try #require(pair["image_alignment"] as? [String: Any], "\(pair)")
            let offset = try #require(alignment["offset_ns"] as? Double, "\(pair)")
            #expect(abs(offset - delayNs) <= Self.tolerance, "\(pair)")
            #expect((alignment["confidence"] as? Double ?? 0) > 0.5, "\(pair)")
            #expect(pair["difference_energy"] != nil)
            #expect(pair["skipped_frames"] as? Int == 0)
            #expect(pair["missing_gyro_axes"] as? [String] == [])
        }
        #expect(pairs.map { $0["intrinsics"] as? Bool } == [true, false, true])
        #expect(pairs.map { $0["calibration_timeshift_cam_imu"] as? Double } == [-0.0075, nil, 0.0075])
        let sidecar = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(session)/fieldcap.json")))
                as? [String: Any])
        let saved = try #require(sidecar["sync_check"] as? [String: Any], "--save puts it into fieldcap.json")
        #expect(NSDictionary(dictionary: saved).isEqual(to: printed), "--save writes what --json prints")
        #expect(printed["window"] as? String == "whole", "\(printed)")
        #expect((printed["checked_utc"] as? String)?.hasSuffix("Z") == true, "\(printed)")
        #expect(
            try FieldcapProcess.run(["validate", session]).status == 0, "the saved result leaves the session valid")
        let text = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("cam0–imu0: offset +7."), "\(text.stdout)")
        #expect(text.stdout.contains("image-alignment with the intrinsics"), "\(text.stdout)")
        // The synthetic camera claims 1 ms; every delay is larger, beyond the estimate's own error.
        #expect(pairs.map { $0["exceeds_frame_uncertainty"] as? Bool } == [true, true, true])
        #expect(pairs.map { $0["frame_uncertainty_ns"] as? Int } == [1_000_000, 1_000_000, 1_000_000])
        let warnings = text.stderr.split(separator: "\n")
        #expect(warnings.count == 4, "\(text.stderr)")
        #expect(warnings.first?.hasPrefix("Warning: cam0–imu0: the offset, +7.") == true, "\(text.stderr)")
        #expect(warnings.filter { $0.contains("larger than the camera's uncertainty_ns (1.00 ms") }.count == 3)
        // cam0's calibration says -7.5 ms, as measured: no warning. cam2's says +7.5 ms, the
        // measured one is -7.3 ms.
        #expect(!warnings.contains { $0.contains("cam0–imu0: the calibration") }, "\(text.stderr)")
        #expect(
            warnings.last?.hasPrefix(
                "Warning: cam2–imu0: the calibration's timeshift_cam_imu is +7.50 ms, the measured one -7.") == true,
            "\(text.stderr)")
        // --from/--to: only that stretch's frames are aligned, and the offset is the same.
        let stretch = try FieldcapProcess.run([
            "check-sync", session, "--max-offset", "200", "--json", "--from", "1", "--to", "3",
        ])
        let stretchObject = try #require(
            try JSONSerialization.jsonObject(with: Data(stretch.stdout.utf8)) as? [String: Any],
            "\(stretch.stdout)\(stretch.stderr)")
        #expect(stretchObject["window_s"] as? [Double] == [1, 3])
        #expect(stretchObject["window"] as? String == "given")
        let stretchPairs = try #require(stretchObject["pairs"] as? [[String: Any]])
        let stretchAlignment = try #require(stretchPairs.first?["image_alignment"] as? [String: Any])
        let stretchFrames = try #require(stretchAlignment["frame_pairs"] as? Int, "\(stretchAlignment)")
        // At most 2 s of 30 fps (61 frames at most, 60 pairs); on a busy machine the camera skips frames, and a pair across a
        // skip is left out, so only "some, and not the whole recording's" is held.
        #expect(stretchFrames >= 20 && stretchFrames <= 60, "2 s of 30 fps: \(stretchFrames) pairs")
        #expect(abs((stretchAlignment["offset_ns"] as? Double ?? 0) - 7_500_000) <= Self.tolerance)
        // A stretch that is not one: refused in one line, exit 64, nothing traps.
        for bad in [
            ["--to", "-5"], ["--from", "nan"], ["--to", "nan"], ["--from", "4", "--to", "2"], ["--to", "0"],
        ] {
            let refused = try FieldcapProcess.run(["check-sync", session] + bad)
            #expect(refused.status == 64, "\(bad): \(refused.status) \(refused.stderr)")
            #expect(refused.stderr.contains("--"), "\(bad): \(refused.stderr)")
        }
    }

    /// A 90° lens's calibration: its focal length, 80 pixels across 160, is not the 60° one (138.6)
    /// the check assumes without intrinsics.
    static let wideCamchain = """
        cam0:
          camera_model: pinhole
          intrinsics: [80, 80, 79.5, 59.5]
          distortion_model: radtan
          distortion_coeffs: [0, 0, 0, 0]
          resolution: [160, 120]

        """

    @Test(
        """
        the focal length is the session's intrinsics': a 90° camera's turns are the gyroscope's \
        with them, and short of them without (a 60° lens assumed)
        """
    )
    func usesTheIntrinsics() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let camchain = "\(root)/wide.yaml"
        try Self.wideCamchain.write(toFile: camchain, atomically: true, encoding: .utf8)
        let session = try record(
            "wide",
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=hand,delay=5ms,fov=90",
                "--cam", "synthetic:160x120@30,id=cam1,format=GREY,motion=hand,delay=5ms,fov=90",
                "--imu", "synthetic:400,id=imu0,motion=hand", "--intrinsics", camchain,
            ], seconds: "3s")
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200", "--json"])
        let pairs = try Self.pairs(result)
        #expect(pairs.map { $0["intrinsics"] as? Bool } == [true, false])
        let alignments = pairs.map { $0["image_alignment"] as? [String: Any] ?? [:] }
        let scales = alignments.map { $0["turn_scale"] as? Double ?? 0 }
        #expect(abs(scales[0] - 1) < 0.07, "with the intrinsics: \(scales)")
        // The shifts read through 138.6 pixels a radian instead of 80: x and y turns at 0.58.
        #expect(scales[1] < 0.85, "without: \(scales)")
        #expect(abs((alignments[0]["offset_ns"] as? Double ?? 0) - 5_000_000) <= Self.tolerance, "\(alignments)")
    }

    @Test(
        """
        a rig held still is refused in one line per pair that says to turn it by hand, and a camera \
        too small to align in one that says so, with status 1
        """
    )
    func refusesAStillRig() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(
            "still",
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=still",
                "--cam", "synthetic:8x6@30,id=cam1,format=GREY,motion=still",
                "--imu", "synthetic:200,id=imu0,motion=still",
            ], seconds: "3s")
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200"])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(result.stdout)")
        #expect(lines.first?.hasPrefix("cam0–imu0: refused: the rig hardly turned") == true, "\(result.stdout)")
        #expect(lines.first?.contains("by hand") == true, "\(result.stdout)")
        #expect(
            lines.last?.hasPrefix("cam1–imu0: refused: cam1's frames, 8x6, are too small to align") == true,
            "\(result.stdout)")
    }

    @Test("a camera stored as H.264, which the exports cannot read, is refused in its line; the others are checked")
    func refusesAnUnreadableCamera() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(
            "h264",
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=hand,delay=5ms",
                "--cam", "synthetic:160x120@30,id=cam1,format=GREY,motion=hand",
                "--imu", "synthetic:200,id=imu0,motion=hand",
            ], seconds: "3s")
        // cam1's sidecar entry says H264, as a hardware encoder's stream is recorded (the
        // validator reads the Matroska file, not its codec).
        let sidecar = "\(session)/fieldcap.json"
        var text = try String(contentsOfFile: sidecar, encoding: .utf8)
        let cam1Format = try #require(text.range(of: "\"pixel_format\" : \"GREY\"", options: .backwards))
        text.replaceSubrange(cam1Format, with: "\"pixel_format\" : \"H264\"")
        try text.write(toFile: sidecar, atomically: true, encoding: .utf8)
        try #require(try FieldcapProcess.run(["validate", session]).status == 0)
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200"])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2, "\(result.stdout)")
        #expect(lines.first?.hasPrefix("cam0–imu0: offset +") == true, "\(result.stdout)")
        #expect(lines.last?.hasPrefix("cam1–imu0: refused: cam1 is stored as H264") == true, "\(result.stdout)")
    }

    @Test(
        """
        an MJPEG frame that does not decode, or whose header gives another size, is skipped and \
        counted; the camera's other frames are checked
        """
    )
    func skipsUnreadableFrames() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(
            "mjpeg", ["--cam", "synthetic:160x120@30,format=MJPG", "--imu", "synthetic:200,motion=hand"],
            seconds: "2s")
        var video = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "\(session)/cam0.mkv")))
        // Each frame is a JPEG: its start (FF D8 FF), and its size in the frame header (SOF0, FF C0).
        let starts = video.indices.dropLast(2).filter {
            video[$0] == 0xFF && video[$0 + 1] == 0xD8 && video[$0 + 2] == 0xFF
        }
        try #require(starts.count > 20)
        let header = try #require((starts[5]..<starts[6]).first { video[$0] == 0xFF && video[$0 + 1] == 0xC0 })
        video.replaceSubrange((header + 5)..<(header + 9), with: [0xFF, 0xFF, 0xFF, 0xFF])  // 65535 x 65535
        video[starts[10] + 1] = 0  // no longer a JPEG
        try Data(video).write(to: URL(fileURLWithPath: "\(session)/cam0.mkv"))
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200", "--json"])
        let pairs = try Self.pairs(result)
        #expect(pairs.first?["skipped_frames"] as? Int == 2, "\(pairs)")
    }

    @Test(
        """
        serve --check-sync: a recording is checked once it stops; the event sync_checked, the \
        session's sync_check in the API, fieldcap.json and fieldcap sessions all say the offset
        """)
    func serveChecksAfterRecording() throws {
        let serve = try ServeProcess(
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=hand,delay=7.5ms",
                "--imu", "synthetic:400,id=imu0,motion=hand", "--check-sync",
            ], root: "\(root)/served")
        let watcher = try EventsWatcher(serve, seconds: 90, until: "sync_checked")
        let started = try serve.request("POST", "/api/v1/recording/start", body: "{\"duration\":\"3s\"}")
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        let lines = watcher.lines()
        let checked = try #require(
            lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
                .first { $0["event"] as? String == "sync_checked" }, "\(lines.suffix(3)) \(serve.stderr)")
        #expect(checked["name"] as? String == name)
        let event = try #require(checked["sync_check"] as? [String: Any], "\(checked)")
        let pair = try #require((event["pairs"] as? [[String: Any]])?.first)
        let offset = try #require((pair["image_alignment"] as? [String: Any])?["offset_ns"] as? Double, "\(pair)")
        #expect(abs(offset - 7_500_000) <= Self.tolerance, "\(pair)")
        // The API shows what the event told, as fieldcap.json keeps it.
        let shown = try serve.request("GET", "/api/v1/sessions/\(name)")
        let entry = try #require(shown.json["sync_check"] as? [String: Any], "\(shown.text)")
        #expect(NSDictionary(dictionary: entry).isEqual(to: event))
        let sidecar = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(root)/served/\(name)/fieldcap.json"))) as? [String: Any])
        #expect(NSDictionary(dictionary: sidecar["sync_check"] as? [String: Any] ?? [:]).isEqual(to: event))
        #expect(serve.stderr.contains("sync check of \(name): cam0–imu0 +7."), "\(serve.stderr)")
        let spec = ServeCommandTests.package
            .appendingPathComponent("Sources/7-Frontends/FieldcapService/Web/openapi.yaml").path
        let check = try runTool(
            "env",
            [
                "python3", ServeCommandTests.script("Clients/openapi_check.py"), serve.base, spec, "--token", "",
                "--session", name,
            ])
        #expect(check.status == 0, "the session with its sync_check matches openapi.yaml: \(check.output)")
        let listed = try FieldcapProcess.run(["sessions", "\(root)/served"])
        #expect(listed.stdout.contains("; sync cam0–imu0 +7."), "\(listed.stdout)")
        #expect(try FieldcapProcess.run(["validate", "\(root)/served/\(name)"]).status == 0)
        #expect(serve.terminate() == 0)
    }

    @Test("motion and delay are refused on a real device, and delay without motion on a synthetic camera")
    func refusesMotionWhereItMeansNothing() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let delayAlone = try FieldcapProcess.run([
            "record", "--out", "\(root)/x", "--duration", "1s", "--cam", "synthetic:160x120@30,delay=5ms",
        ])
        #expect(delayAlone.status != 0)
        #expect(delayAlone.stderr.contains("give motion=hand"), "\(delayAlone.stderr)")
        let device = try FieldcapProcess.run([
            "record", "--out", "\(root)/y", "--duration", "1s", "--cam", "/dev/video99,motion=hand",
        ])
        #expect(device.status != 0)
        #expect(device.stderr.contains("motion, delay and fov are for synthetic sources"), "\(device.stderr)")
    }
}
