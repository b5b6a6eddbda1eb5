import Foundation
import Testing

/// `fieldcap record` with `encode=jpeg` and `encode=ffv1`, judged by FFmpeg and GStreamer decoding
/// every frame and by the luma PSNR (JPEG) or byte equality (FFV1) against a raw camera of the
/// same session that saw the same frames
/// (Tests/FieldcapCLITests/Clients/encoded_check.py), never by fieldcap's code.
@Suite("fieldcap record: encoded cameras", .serialized)
struct EncodeCommandTests {
    let root = NSTemporaryDirectory() + "/encode-\(UUID().uuidString)"

    /// The luma PSNR every JPEG frame of the synthetic pattern reaches at the default quality
    /// (85): measured at 40.1-40.7 dB (its sharp bars are JPEG's worst case); docs/encoding.md documents it.
    static let psnrFloor = "38"
    /// The same for a Bayer camera's demosaiced JPEGs: the mosaic's bilinear luma has a zipper
    /// along the bars' colour edges, which JPEG codes less well (measured 37.7 dB at 128x96,
    /// 40.6 dB at 320x240, against OpenCV's demosaic of the raw twin).
    static let bayerPSNRFloor = "35"

    init() throws { try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true) }

    func judge(_ arguments: [String]) throws -> (passed: Bool, output: String) {
        try ExportCommandTests.judge(arguments, checker: "encoded_check.py")
    }

    @Test(
        """
        YUYV, NV12, GREY and Bayer (demosaiced) encoded as JPEG at the default quality: FFmpeg and \
        GStreamer decode every frame, each within the PSNR floor of the raw camera's, the numbers exact
        """
    )
    func jpegFromEachFormat() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/session"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "2s",
            "--cam", "synthetic:320x240@30,id=yuyv", "--cam", "synthetic:320x240@30,id=yuyv_jpeg,encode=jpeg",
            "--cam", "synthetic:160x120@15,id=grey,format=GREY", "--cam",
            "synthetic:160x120@15,id=grey_jpeg,format=GREY,encode=jpeg:85",
            "--cam", "synthetic:96x64@10,id=nv12,format=NV12", "--cam",
            "synthetic:96x64@10,id=nv12_jpeg,format=NV12,encode=JPEG",
            "--cam", "synthetic:128x96@10,id=bayer,format=GRBG", "--cam",
            "synthetic:128x96@10,id=bayer_jpeg,format=GRBG,encode=jpeg",
            "--imu", "synthetic:200",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("stored as JPEG q85"), "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        // A Bayer camera's JPEGs are its colour (the checker holds them to OpenCV's demosaic).
        for (encoded, raw) in [
            ("yuyv_jpeg", "yuyv"), ("grey_jpeg", "grey"), ("nv12_jpeg", "nv12"), ("bayer_jpeg", "bayer"),
        ] {
            let floor = raw == "bayer" ? Self.bayerPSNRFloor : Self.psnrFloor
            let verdict = try judge([out, encoded, "--reference", raw, "--psnr-floor", floor])
            #expect(verdict.passed, "\(verdict.output)")
            print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // The checker can fail: the same frames held to a floor no JPEG at quality 85 reaches.
        let strict = try judge([out, "yuyv_jpeg", "--reference", "yuyv", "--psnr-floor", "60"])
        #expect(!strict.passed && strict.output.contains("below the floor"), "\(strict.output)")
        // An encoded camera exports as an MJPEG camera does: each CompressedImage is its JPEG.
        let exported = try FieldcapProcess.run(["export", out, "--format", "mcap", "--out", "\(root)/session.mcap"])
        try #require(exported.status == 0, "\(exported.stderr)")
        let read = try ExportCommandTests.judge(["mcap", out, "\(root)/session.mcap"])
        #expect(read.passed, "\(read.output)")
        // The video is at most a fifth of the raw one's size (about a tenth at 640x480).
        let size = { (id: String) in
            (try FileManager.default.attributesOfItem(atPath: "\(out)/\(id).mkv")[.size] as? Int) ?? 0
        }
        let (encodedBytes, rawBytes) = (try size("yuyv_jpeg"), try size("yuyv"))
        #expect(encodedBytes * 5 < rawBytes, "\(encodedBytes) vs \(rawBytes)")
    }

    @Test(
        """
        YUYV, NV12, GREY, Bayer, Y16 and Z16 encoded as FFV1: FFmpeg and GStreamer decode every \
        frame back to the raw camera's bytes exactly, the export reads them as raw, the numbers exact
        """
    )
    func ffv1FromEachFormat() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/lossless"
        var cameras: [String] = []
        let formats = [
            ("yuyv", "YUYV", "320x240@30"), ("grey", "GREY", "160x120@15"), ("nv12", "NV12", "96x64@10"),
            ("y16", "Y16", "96x64@10"), ("z16", "Z16", "96x64@10"), ("bayer", "BA81", "96x64@10"),
        ]
        for (id, format, mode) in formats {
            cameras += ["--cam", "synthetic:\(mode),id=\(id),format=\(format)"]
            cameras += ["--cam", "synthetic:\(mode),id=\(id)_ffv1,format=\(format),encode=ffv1"]
        }
        let result = try FieldcapProcess.run(
            ["record", "--out", out, "--duration", "2s"] + cameras + ["--imu", "synthetic:200"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("stored as lossless FFV1"), "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        for (id, _, _) in formats {
            let verdict = try judge([out, "\(id)_ffv1", "--reference", id])
            #expect(verdict.passed, "\(verdict.output)")
            print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        // The checker can fail: Y16's frames held against Z16's (same size, other samples).
        let strict = try judge([out, "y16_ffv1", "--reference", "z16"])
        #expect(!strict.passed && strict.output.contains("not lossless"), "\(strict.output)")
        // Exported as the raw cameras are: each Image is the captured frame, as FFmpeg decodes it.
        let exported = try FieldcapProcess.run(["export", out, "--format", "mcap", "--out", "\(root)/lossless.mcap"])
        try #require(exported.status == 0, "\(exported.stderr)")
        let read = try ExportCommandTests.judge(["mcap", out, "\(root)/lossless.mcap"])
        #expect(read.passed, "\(read.output)")
        // Lossless but smaller: the test pattern's YUYV in well under half its bytes.
        let size = { (id: String) in
            (try FileManager.default.attributesOfItem(atPath: "\(out)/\(id).mkv")[.size] as? Int) ?? 0
        }
        let (encodedBytes, rawBytes) = (try size("yuyv_ffv1"), try size("yuyv"))
        #expect(encodedBytes * 2 < rawBytes, "\(encodedBytes) vs \(rawBytes)")
    }

    @Test(
        """
        threads=3: JPEG and FFV1 cameras coded on three threads each are written in capture \
        order, every frame exact (FFV1) or within the PSNR floor (JPEG) of its raw twin
        """
    )
    func threads() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/threads"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "2s",
            "--cam", "synthetic:320x240@60,id=raw", "--cam", "synthetic:320x240@60,id=jpeg,encode=jpeg,threads=3",
            "--cam", "synthetic:320x240@60,id=ffv1,encode=ffv1,threads=3",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("on 3 threads of its own"), "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        // Frames out of order would fail both: each is held against the raw frame of its sequence.
        for (id, floor) in [("jpeg", Self.psnrFloor), ("ffv1", "0")] {
            let verdict = try judge([out, id, "--reference", "raw", "--psnr-floor", floor])
            #expect(verdict.passed, "\(verdict.output)")
            print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let sidecar = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: "\(out)/fieldcap.json")))
        let streams = (sidecar as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        for id in ["jpeg", "ffv1"] {
            let encoding = streams.first { $0["id"] as? String == id }?["encoding"] as? [String: Any]
            #expect(encoding?["threads"] as? Int == 3, "\(id): \(encoding ?? [:])")
            #expect(encoding?["input"] as? String == "copied", "\(id): \(encoding ?? [:])")
        }
    }

    @Test(
        """
        FFV1 too slow for 1920x1080 at 60 fps: the encoder drops, not capture, \
        the encoder's drops are counted, every frame kept decodes
        """
    )
    func ffv1TooSlow() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/ffv1-fast"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "3s",
            "--cam", "synthetic:1920x1080@60,id=cam,encode=ffv1,buffers=32", "--imu", "synthetic:1000,id=imu",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        // FFV1 takes about 35 ms a 1080p frame here (one thread, a debug build's plane split),
        // twice the camera's period: the encoder must drop, capture must not. A writer that
        // waited for the encoder would be 90 frames behind by the end, far past the 32 buffers;
        // the 32 (533 ms) are for the machine's own stalls: with 16, a CI machine busy with
        // other tests once starved the debug build's writer for 3 frames. A machine busier still
        // (two CPU hogs beside the suite) starved it for 7 with 32: capture may lose a tenth of
        // the 180 frames to the machine, never the encoder's 90.
        let verdict = try judge([out, "cam", "--min-encoder-drops", "1", "--max-ring-drops", "18"])
        #expect(verdict.passed, "\(verdict.output)")
        print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test(
        """
        segments of a recording whose encoder is behind: each segment's \
        sidecar splits its drops by reason, its frame numbers exact
        """
    )
    func encoderTooSlowInSegments() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/segmented"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "3500ms", "--segment", "1s",
            "--cam", "synthetic:1280x720@300,id=cam,encode=jpeg:100,buffers=16",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        let index =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/recording.json")))
            as! [String: Any]
        let segments = try #require(index["segments"] as? [[String: Any]])
        try #require(segments.count >= 3)
        var encoderDrops = 0
        for segment in segments {
            let directory = "\(out)/\(segment["directory"] as! String)"
            let verdict = try judge([directory, "cam"])
            #expect(verdict.passed, "\(verdict.output)")
            let sidecar =
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: "\(directory)/fieldcap.json")))
                as! [String: Any]
            let drops = (sidecar["streams"] as! [[String: Any]])[0]["drops"] as! [String: Any]
            encoderDrops += ((drops["reasons"] as? [String: [String: Any]])?["encoder"]?["count"] as? Int) ?? 0
        }
        #expect(encoderDrops > 0, "no segment counted an encoder drop")
    }

    @Test(
        """
        an extract across segments of JPEG and FFV1 cameras: the files keep what they were coded with \
        (FFV1's configuration record) and the sidecar its encoding, every frame decodes, FFV1 bit-exact
        """
    )
    func extractOfEncodedCameras() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/segmented"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "3500ms", "--segment", "1s", "-q",
            "--cam", "synthetic:160x120@20,id=raw", "--cam", "synthetic:160x120@20,id=jpeg,encode=jpeg",
            "--cam", "synthetic:160x120@20,id=ffv1,encode=ffv1,threads=2",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let index =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/recording.json")))
            as! [String: Any]
        let segments = try #require(index["segments"] as? [[String: Any]])
        try #require(segments.count >= 3)
        // From half-way through the first segment to half-way through the third.
        let from = try #require(segments[0]["start_utc"] as? String)
        let to = try #require(segments[2]["start_utc"] as? String)
        let extract = "\(root)/extract"
        let extracted = try FieldcapProcess.run([
            "extract", out, "--from", Self.halfSecondAfter(from), "--to", Self.halfSecondAfter(to), "--out", extract,
        ])
        try #require(extracted.status == 0, "\(extracted.stderr)")
        for (id, floor) in [("jpeg", Self.psnrFloor), ("ffv1", "0")] {
            let verdict = try judge([extract, id, "--reference", "raw", "--psnr-floor", floor])
            #expect(verdict.passed, "\(verdict.output)")
            print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// `2026-11-26T12:09:38.209Z` half a second later, as the command line takes times.
    static func halfSecondAfter(_ utc: String) throws -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = try #require(formatter.date(from: utc)).addingTimeInterval(0.5)
        return formatter.string(from: date)
    }

    @Test(
        """
        an encoder too slow for its camera (1280x720 at 300 fps, quality 100): \
        the drops are the encoder's, counted by reason, and the session validates
        """
    )
    func encoderTooSlow() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let out = "\(root)/fast"
        let result = try FieldcapProcess.run([
            "record", "--out", out, "--duration", "3s", "--json",
            "--cam", "synthetic:1280x720@300,id=cam,encode=jpeg:100,buffers=16", "--imu", "synthetic:1000,id=imu",
        ])
        try #require(result.status == 0, "\(result.stderr)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)")
        let sidecar =
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/fieldcap.json")))
            as! [String: Any]
        let streams = Dictionary(
            uniqueKeysWithValues: (sidecar["streams"] as! [[String: Any]]).map { ($0["id"] as! String, $0) })
        let drops = streams["cam"]!["drops"] as! [String: Any]
        let reasons = drops["reasons"] as! [String: [String: Any]]
        // The encoder's slowness must cost capture nothing: its drops are its own. On a machine
        // busy with other work the writer that gives the camera its buffers back can itself wait
        // past the 16 buffers' 53 ms (7 frames of about 900 were seen so, under a CPU hog, a
        // second QEMU guest and six test processes): at most 1% of the frames, never the
        // encoder's share.
        let ringDropped = reasons["ring"]?["count"] as? Int ?? 0
        let encoderDropped = (reasons["encoder"]?["count"] as? Int) ?? -1
        #expect(ringDropped <= 9 && ringDropped < encoderDropped, "capture dropped: \(drops)")
        #expect((streams["imu"]!["drops"] as! [String: Any])["count"] as? Int == 0)
        // A 720p JPEG at quality 100 takes libjpeg-turbo 5-6 ms here (a fifth to a third of the
        // frames dropped at 240 fps), well over the camera's 3.3 ms: the encoder must drop. The
        // checker holds every drop to adding up, and FFmpeg and GStreamer decode every frame kept.
        // (4K at 60 fps also dropped in capture: with 16 MB frames drawn and copied at 1 GB/s each
        // the camera's buffers ran out now and then, encoder or not; see the session note.)
        let verdict = try judge([out, "cam", "--min-encoder-drops", "1"])
        #expect(verdict.passed, "\(verdict.output)")
        print(verdict.output.trimmingCharacters(in: .whitespacesAndNewlines))
        // The stop line says the same as the sidecar.
        let stop = result.stdout.split(separator: "\n").last.map { String($0) } ?? ""
        #expect(stop.contains("\"encoder_dropped\":\(encoderDropped)"), "\(stop)")
    }
}
