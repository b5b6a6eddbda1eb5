import Foundation
import Testing

/// `fieldcap export --format euroc`, `--format images` and `--format mp4`, judged by OpenCV,
/// FFmpeg's tools and the files' own readers (Tests/FieldcapCLITests/Clients/folder_check.py),
/// never by fieldcap's code.
@Suite("fieldcap export: EuRoC, image folders and MP4", .serialized)
struct ExportFolderTests {
    let root = NSTemporaryDirectory() + "/export-folders-\(UUID().uuidString)"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    /// YUYV, GREY, NV12, a Y16 camera (depth when `--depth` says so), a Z16 depth camera, an MJPEG
    /// camera, a Bayer (GRBG) camera, and an IMU.
    func recordSession(extra: [String] = []) throws -> String {
        let out = "\(root)/session"
        let result = try FieldcapProcess.run(
            [
                "record", "--out", out, "--duration", "2s", "--cam", "synthetic:320x240@30,id=cam0",
                "--cam", "synthetic:160x120@15,id=cam1,format=GREY", "--cam", "synthetic:64x48@10,id=depth0,format=Y16",
                "--cam", "synthetic:96x64@10,id=cam3,format=NV12", "--cam", "synthetic:80x60@10,id=z0,format=Z16",
                "--cam", "synthetic:160x120@15,id=mj,format=MJPG", "--cam", "synthetic:96x64@10,id=bayer,format=GRBG",
                "--imu", "synthetic:200,id=imu0",
            ] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// `fieldcap export SESSION ARGUMENTS...`, required to succeed; what it printed.
    static func export(_ session: String, _ arguments: [String]) throws -> String {
        let result = try FieldcapProcess.run(["export", session] + arguments)
        try #require(result.status == 0, "\(arguments): \(result.stderr)")
        return result.stdout
    }

    func export(_ session: String, _ arguments: [String]) throws -> String { try Self.export(session, arguments) }

    func judge(_ arguments: [String]) throws -> (passed: Bool, output: String) {
        try ExportCommandTests.judge(arguments, checker: "folder_check.py")
    }

    func listing() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: root).sorted() }

    @Test(
        """
        EuRoC, grey and colour: every PNG read by OpenCV equals its frame's luma, RGB \
        or 16-bit samples; the CSVs, times file and sensor.yaml equal the session's
        """
    )
    func euroc() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        let before = try FileManager.default.contentsOfDirectory(atPath: session).sorted()
        let grey = "\(root)/grey"
        let said = try export(session, ["--format", "euroc", "--grey", "--depth", "depth0", "--out", grey])
        #expect(said.contains("depth0 -> mav0/depth0"), "\(said)")
        #expect(said.contains("cam3 -> mav0/cam2"), "\(said)")
        #expect(said.contains("z0 -> mav0/depth1"), "Z16 is depth without --depth: \(said)")
        #expect(said.contains("mj -> mav0/cam3"), "\(said)")
        var verdict = try judge(["euroc", session, grey, "--depth", "depth0"])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("euroc cam2 (cam3)"), "\(verdict.output)")
        #expect(verdict.output.contains("euroc depth0 (depth0)"), "\(verdict.output)")
        #expect(verdict.output.contains("euroc depth1 (z0)"), "\(verdict.output)")
        #expect(verdict.output.contains("euroc cam3 (mj)"), "\(verdict.output)")
        #expect(verdict.output.contains("euroc cam4 (bayer)"), "\(verdict.output)")

        let colour = "\(root)/colour"
        _ = try export(
            session, ["--format", "euroc", "--colour", "--streams", "cam0,cam3,mj,bayer,imu0", "--out", colour])
        verdict = try judge(["euroc", session, colour, "--colour", "--streams", "cam0,cam3,mj,bayer,imu0"])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: session).sorted() == before)
        #expect(try listing().filter { $0.hasPrefix(".") }.isEmpty, "nothing hidden left behind")
    }

    @Test(
        """
        Image folder: JPEGs read by OpenCV above the PSNR floor, the \
        nearest IMU sample and depth frame per image, --every and --fps thin
        """
    )
    func images() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        for (name, thinning) in [("all", [String]()), ("every", ["--every", "3"]), ("fps", ["--fps", "4"])] {
            let out = "\(root)/\(name)"
            let said = try export(
                session,
                ["--format", "images", "--streams", "cam0,depth0,imu0", "--depth", "depth0", "--out", out] + thinning)
            #expect(said.contains("depth0 -> depth"), "\(said)")
            let verdict = try judge(
                ["images", session, out, "--streams", "cam0,depth0,imu0", "--depth", "depth0"] + thinning)
            #expect(verdict.passed, "\(name): \(verdict.output)")
        }
        // A Z16 camera is depth without --depth; its holes of no depth have a confidence of 0.
        let z16 = "\(root)/z16"
        let said = try export(session, ["--format", "images", "--streams", "cam0,z0,imu0", "--out", z16])
        #expect(said.contains("z0 -> depth"), "\(said)")
        let z16Verdict = try judge(["images", session, z16, "--streams", "cam0,z0,imu0"])
        #expect(z16Verdict.passed, "\(z16Verdict.output)")
        #expect(z16Verdict.output.contains("(z0, Z16)"), "\(z16Verdict.output)")
        #expect(!z16Verdict.output.contains(" 0 with holes"), "the synthetic depth has holes: \(z16Verdict.output)")
        // An MJPEG camera's JPEGs are its own.
        let mjpeg = "\(root)/mjpeg"
        _ = try export(session, ["--format", "images", "--streams", "mj,imu0", "--out", mjpeg])
        let mjpegVerdict = try judge(["images", session, mjpeg, "--streams", "mj,imu0"])
        #expect(mjpegVerdict.passed, "\(mjpegVerdict.output)")
        // A Bayer camera's JPEGs are its demosaiced colour.
        let bayer = "\(root)/bayer"
        _ = try export(session, ["--format", "images", "--streams", "bayer,imu0", "--out", bayer])
        let bayerVerdict = try judge(["images", session, bayer, "--streams", "bayer,imu0"])
        #expect(bayerVerdict.passed, "\(bayerVerdict.output)")
        // A GREY camera alone, no IMU, no depth.
        let out = "\(root)/grey"
        _ = try export(session, ["--format", "images", "--streams", "cam1", "--out", out])
        let verdict = try judge(["images", session, out, "--streams", "cam1"])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(!FileManager.default.fileExists(atPath: "\(out)/depth"))
    }

    @Test(
        """
        MP4: every camera as H.264 High 4:2:0 that ffprobe reads and ffmpeg decodes, \
        each frame at its capture time, its planes the camera's above the PSNR floor
        """
    )
    func mp4() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        let out = "\(root)/videos"
        let said = try export(session, ["--format", "mp4", "--out", out])
        // As many frames as the session stamped (15 fps for 2 s: 30 or 31, by when capture began).
        let stamped = try String(contentsOfFile: "\(session)/mj.timestamps.jsonl", encoding: .utf8)
            .split(separator: "\n").count
        #expect(stamped >= 29)
        #expect(said.contains("mj.mp4: \(stamped) frames of 160x120 H.264 (from MJPG)"), "\(said)")
        let verdict = try judge(["mp4", session, out])
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.components(separatedBy: "times as captured").count == 8, "\(verdict.output)")
        // One camera, by --streams; a sensor alone has nothing to show.
        let one = "\(root)/one"
        _ = try export(session, ["--format", "mp4", "--streams", "bayer,imu0", "--out", one])
        #expect(try FileManager.default.contentsOfDirectory(atPath: one) == ["bayer.mp4"])
        let result = try FieldcapProcess.run([
            "export", session, "--format", "mp4", "--streams", "imu0", "--out", "\(root)/none",
        ])
        #expect(result.status == 64 && result.stderr.contains("--format mp4 needs a camera"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/none"))
    }

    @Test("bad input for the folders: one line each, the right status, nothing written")
    func badInput() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        let before = try listing()
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["--format", "images", "--out", "\(root)/a"], 64, "one camera"),
            (["--format", "images", "--streams", "imu0", "--out", "\(root)/a"], 64, "needs a camera"),
            (["--format", "euroc", "--colour", "--streams", "depth0", "--out", "\(root)/a"], 64, "no colour"),
            (
                ["--format", "images", "--streams", "cam0,depth0,z0", "--depth", "depth0", "--out", "\(root)/a"], 64,
                "one depth camera"
            ),
            (["--format", "mcap", "--depth", "cam0", "--out", "\(root)/a"], 64, "not a 16-bit format"),
            (["--format", "mcap", "--colour", "--out", "\(root)/a"], 64, "--colour"),
            (["--format", "images", "--grey", "--out", "\(root)/a"], 64, "--grey is an option of --format euroc"),
            (["--format", "euroc", "--grey", "--colour", "--out", "\(root)/a"], 64, "choose one"),
            (["--format", "euroc", "--quality", "80", "--out", "\(root)/a"], 64, "--quality"),
            (["--format", "images", "--streams", "cam0", "--quality", "0", "--out", "\(root)/a"], 64, "--quality 0"),
            (["--format", "images", "--streams", "cam0", "--every", "0", "--out", "\(root)/a"], 64, "--every 0"),
            (["--format", "images", "--streams", "cam0", "--fps", "0", "--out", "\(root)/a"], 64, "--fps"),
        ]
        for (arguments, status, says) in cases {
            let result = try FieldcapProcess.run(["export", session] + arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            let errorLines = result.stderr.split(separator: "\n")
            #expect(errorLines.count == 1 && errorLines[0].hasPrefix("Error: "), "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(try listing() == before, "\(arguments) left something behind")
        }
    }
}
