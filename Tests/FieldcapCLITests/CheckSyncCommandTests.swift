import Foundation
import Testing

/// `fieldcap check-sync` on recordings whose truth is known: synthetic cameras that see a textured
/// wall turned by hand with their stamps late by a chosen delay, and a synthetic IMU whose gyroscope
/// reads the same turning (`motion=hand`, `delay=`).
@Suite("fieldcap check-sync", .serialized)
struct CheckSyncCommandTests {
    let root = NSTemporaryDirectory() + "/check-sync-cli-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    func record(_ name: String, _ devices: [String], seconds: String) throws -> String {
        let out = "\(root)/\(name)"
        let result = try FieldcapProcess.run(["record", "--out", out, "--duration", seconds] + devices)
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// cam0's calibration, as Kalibr writes it: the synthetic camera's focal length, and a time
    /// shift that is not the one its stamps were given.
    static let camchain = """
        cam0:
          camera_model: pinhole
          intrinsics: [138.6, 138.6, 79.5, 59.5]
          distortion_model: radtan
          distortion_coeffs: [0, 0, 0, 0]
          resolution: [160, 120]
          timeshift_cam_imu: 0.03

        """

    @Test(
        """
        the offset of each camera against the IMU is the delay its stamps were given, within a \
        quarter of a frame period, at 30 fps (grey, with intrinsics) and 60 fps (YUYV, without); \
        the calibration's other time shift is warned about
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
                "--imu", "synthetic:400,id=imu0,motion=hand", "--intrinsics", camchain,
            ], seconds: "4s")
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200", "--json", "--save"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let pairs = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result.stdout)")
        #expect(pairs.map { "\($0["camera"]!)-\($0["imu"]!)" } == ["cam0-imu0", "cam1-imu0"])
        let truths: [(delayNs: Double, fps: Double)] = [(7_500_000, 30), (-20_000_000, 60)]
        for (pair, (delayNs, fps)) in zip(pairs, truths) {
            let alignment = try #require(pair["image-alignment"] as? [String: Any], "\(pair)")
            let offset = try #require(alignment["offset_ns"] as? Double, "\(pair)")
            #expect(abs(offset - delayNs) <= 0.25e9 / fps, "\(pair)")
            #expect((alignment["confidence"] as? Double ?? 0) > 0.5, "\(pair)")
            #expect(pair["difference-energy"] != nil)
        }
        #expect(pairs.map { $0["intrinsics"] as? Bool } == [true, false])
        #expect(pairs.first?["calibration_timeshift_cam_imu"] as? Double == 0.03)
        let saved = try String(contentsOfFile: "\(session)/sync_check.json", encoding: .utf8)
        #expect(saved == result.stdout, "--save writes what --json prints")
        #expect(try FieldcapProcess.run(["validate", session]).status == 0, "the saved file leaves the session valid")
        let text = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("cam0–imu0: offset +"), "\(text.stdout)")
        #expect(text.stdout.contains("image-alignment with the intrinsics"), "\(text.stdout)")
        // The synthetic camera claims 1 ms; both delays are larger.
        #expect(pairs.map { $0["exceeds_frame_uncertainty"] as? Bool } == [true, true])
        #expect(pairs.map { $0["frame_uncertainty_ns"] as? Int } == [1_000_000, 1_000_000])
        let warnings = text.stderr.split(separator: "\n")
        #expect(warnings.count == 3, "\(text.stderr)")
        #expect(warnings.first?.hasPrefix("Warning: cam0–imu0: the offset, +7.") == true, "\(text.stderr)")
        #expect(warnings.contains { $0.contains("larger than the camera's uncertainty_ns (1.00 ms") })
        #expect(
            warnings.last?.hasPrefix("Warning: cam0–imu0: the calibration's timeshift_cam_imu is +30.00 ms") == true,
            "\(text.stderr)")
    }

    @Test("a rig held still is refused in one line per pair that says to turn it by hand, with status 1")
    func refusesAStillRig() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(
            "still",
            [
                "--cam", "synthetic:160x120@30,id=cam0,format=GREY,motion=still",
                "--imu", "synthetic:200,id=imu0,motion=still",
            ], seconds: "3s")
        let result = try FieldcapProcess.run(["check-sync", session, "--max-offset", "200"])
        #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stdout)")
        #expect(lines.first?.hasPrefix("cam0–imu0: refused: the rig hardly turned") == true, "\(result.stdout)")
        #expect(result.stdout.contains("by hand"), "\(result.stdout)")
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
        #expect(device.stderr.contains("motion and delay are for synthetic sources"), "\(device.stderr)")
    }
}
