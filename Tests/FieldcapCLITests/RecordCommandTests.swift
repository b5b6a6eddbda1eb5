import Foundation
import SyncField
import TestSupport
import Testing

func freshPath(_ label: String) -> String { NSTemporaryDirectory() + "/\(label)-\(UUID().uuidString)" }

func sidecar(_ directory: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/fieldcap.json"))
    return try JSONSerialization.jsonObject(with: data) as! [String: Any]
}

@Suite("fieldcap record")
struct RecordCommandTests {
    @Test("synthetic cameras and an IMU for a second: exit 0, a valid session, videos, a sidecar")
    func syntheticSession() throws {
        let out = freshPath("record")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run([
            "--cam", "synthetic:320x240@30,id=cam_left", "--cam", "synthetic:160x120@15", "--imu", "synthetic:500",
            "--duration", "1s", "--out", out, "--host-id", "rig_07",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(SessionValidator.validate(directory: out).problems.isEmpty)
        let files = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(
            files == [
                "cam0.frames.ndjson", "cam0.mkv", "cam0.timestamps.jsonl", "cam_left.frames.ndjson", "cam_left.mkv",
                "cam_left.timestamps.jsonl", "fieldcap.json",
                "imu0.jsonl", "imu0.timestamps.jsonl", "manifest.json", "sync_point.json",
            ])
        let info = try sidecar(out)
        #expect(info["stop_reason"] as? String == "duration")
        #expect(info["host_id"] as? String == "rig_07")
        let streams = try #require(info["streams"] as? [[String: Any]])
        #expect(streams.map { $0["id"] as? String } == ["cam_left", "cam0", "imu0"])
        #expect(result.stderr.contains("check it with: fieldcap validate"))
        // The start lines: one per stream, ids and devices in columns, with what each was granted.
        for line in [
            "recording 3 streams into \(out)",
            "  cam_left  synthetic:320x240@30  moving test pattern, "
                + "YUYV 320x240, 30 fps, 8 buffers, stamped at dequeue",
            "  cam0      synthetic:160x120@15  moving test pattern, "
                + "YUYV 160x120, 15 fps, 8 buffers, stamped at dequeue",
            "  imu0      synthetic:500         accel_x accel_y accel_z (m/s²) "
                + "gyro_x gyro_y gyro_z (rad/s), 500 Hz, stamped at its due time",
        ] {
            #expect(
                result.stderr.split(separator: "\n").contains { $0 == line }, "no line '\(line)' in: \(result.stderr)")
        }
        #expect(!result.stderr.contains("warning:"), "\(result.stderr)")
        // The sidecar says whether the disk stalled, also when it did not.
        let stalls = try #require(info["disk_stalls"] as? [String: Any])
        #expect(stalls["threshold_seconds"] as? Double == 1)
        #expect(stalls["files"] is [Any])
    }

    @Test(
        """
        a file the file system will not let grow (File too large, as FAT's \
        4 GiB gives it) ends the recording cleanly: exit 1, why, a valid session
        """
    )
    func fileTooLarge() throws {
        let out = freshPath("record-too-large")
        defer { try? FileManager.default.removeItem(atPath: out) }
        // RLIMIT_FSIZE gives the same EFBIG at 16 MiB (its signal ignored, as a file system's
        // limit sends none).
        let run = try runExecutable(
            "/bin/bash",
            [
                "-c", "trap '' XFSZ; ulimit -f 16384; exec \"$0\" \"$@\"", FieldcapProcess.executable.path,
                "--cam", "synthetic:640x480@30,id=cam", "--imu", "synthetic:100", "--duration", "10s", "--out", out,
            ])
        #expect(!run.signalled && run.status == 1, "\(run.output)")
        #expect(run.output.contains("File too large"), "\(run.output)")
        #expect(run.output.contains("validates"), "\(run.output)")
        let validate = try FieldcapProcess.run(["validate", out])
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
    }

    @Test("SIGINT stops cleanly, and a second SIGINT while stopping changes nothing")
    func interrupt() throws {
        let out = freshPath("record-sigint")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run(["--cam", "synthetic:160x120@30", "--imu", "synthetic:1000", "--out", out])
        { process in
            // Wait until it is recording (bounded), then interrupt twice.
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: out + "/imu0.timestamps.jsonl") && Date() < deadline {
                usleep(50_000)
            }
            usleep(300_000)
            kill(process.processIdentifier, SIGINT)
            usleep(20_000)
            kill(process.processIdentifier, SIGINT)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(SessionValidator.validate(directory: out).problems.isEmpty)
        #expect(try sidecar(out)["stop_reason"] as? String == "SIGINT")
    }

    @Test(
        "no recording loads FFmpeg: videos are written with libmatroska",
        arguments: [
            (["--imu", "synthetic:200"]),
            (["--cam", "synthetic:160x120@30"]),
        ])
    func noFFmpeg(devices: [String]) throws {
        let out = freshPath("record-no-ffmpeg")
        defer { try? FileManager.default.removeItem(atPath: out) }
        var maps = ""
        let result = try FieldcapProcess.run(devices + ["--out", out, "-q"]) { process in
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: out + "/fieldcap.json") && Date() < deadline {
                usleep(20_000)
            }
            usleep(200_000)
            // Read to the end: procfs files report no size, and a sized read stops at the first page.
            if let file = FileHandle(forReadingAtPath: "/proc/\(process.processIdentifier)/maps") {
                maps = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
            }
            kill(process.processIdentifier, SIGINT)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(maps.contains("libmatroska"))
        #expect(!maps.contains("libavformat") && !maps.contains("libavcodec"))
    }

    @Test("--json prints a start line, one progress object per line, and a stop line on stdout")
    func jsonProgress() throws {
        let out = freshPath("record-json")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run([
            "--cam", "synthetic:160x120@30,id=cam", "--imu", "synthetic:100", "--duration", "1200ms", "--out", out,
            "--json",
        ])
        #expect(result.status == 0)
        let lines = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(lines.count >= 3, "\(result.stdout)")
        #expect(
            lines.map { $0["event"] as? String } == ["start"] + Array(repeating: "progress", count: lines.count - 2) + [
                "stop"
            ])

        let start = try #require(lines.first)
        #expect(start["directory"] as? String == out)
        let streams = try #require(start["streams"] as? [[String: Any]])
        #expect(streams.map { $0["id"] as? String } == ["cam", "imu0"])
        #expect(streams.map { $0["device"] as? String } == ["synthetic:160x120@30", "synthetic:100"])
        #expect(streams.map { $0["time_source"] as? String } == ["dequeue", "dequeue"])
        #expect((streams[0]["summary"] as? String)?.hasPrefix("moving test pattern, YUYV 160x120, 30 fps") == true)
        #expect((streams[0]["granted"] as? [String: Any])?["width"] as? Int == 160)

        // Progress lines keep the shape rigs parse.
        for line in lines.dropFirst().dropLast() {
            #expect(line["streams"] is [Any] && line["elapsed_s"] is Double)
            #expect(line["disk_stalls"] is [Any])
        }

        let stop = try #require(lines.last)
        #expect(stop["reason"] as? String == "duration")
        let final = try #require(stop["streams"] as? [[String: Any]])
        let info = try #require(try sidecar(out)["streams"] as? [[String: Any]])
        #expect(final.map { $0["written"] as? Int } == info.map { $0["written"] as? Int })
        // A run under 2 s is not judged by its rate; synthetic sources report no warnings.
        #expect(final.map { $0["warnings"] as? [String] } == [[], []])
    }

    @Test(
        "bad invocations give one clear line, exit 64, and write nothing",
        arguments: [
            ([], "nothing to record"),
            (["--cam", ""], "name a device"),
            (["--cam", "synthetic,size"], "not KEY=VALUE"),
            (["--cam", "synthetic,zoom=2"], "unknown option 'zoom'"),
            (["--cam", "synthetic,size=641x480"], "even width"),
            (["--cam", "synthetic,fps=0"], "fps '0'"),
            (["--cam", "synthetic,fps=-5"], "fps '-5'"),
            (["--cam", "synthetic,format=H264"], "format 'H264'"),
            (["--imu", "synthetic:0"], "rate '0'"),
            (["--imu", "synthetic:abc"], "rate 'abc'"),
            (["--imu", "synthetic:1e9"], "rate '1e9'"),
            (["--cam", "/dev/video0"], "/dev/video0"),
            (["--cam", "/dev/video0,format=H264"], "format 'H264'"),
            (["--cam", "/dev/null"], "not a V4L2 device"),
            (["--cam", "/tmp"], "a directory"),
            (["--cam", "/etc/hostname"], "a regular file"),
            (["--imu", "iio:device0"], "no IIO devices"),
            (["--imu", "iio:device0,clock=utc"], "clock 'utc'"),
            (["--imu", "iio:device0,channels=accel_x++accel_y"], "joined by '+'"),
            (["--imu", "iio:device0,rate=-5"], "rate '-5'"),
            (["--imu", "synthetic,channels=accel_x"], "for IIO devices"),
            (["--imu", "synthetic,id=a/b"], "stream id 'a/b'"),
            (["--imu", "synthetic,id=..x"], "cannot be used"),
            (["--imu", "synthetic,id=x", "--imu", "synthetic,id=x"], "used twice"),
            (["--imu", "synthetic", "--host-id", "rig/1"], "--host-id"),
            (["--imu", "synthetic", "--duration", "0s"], "duration"),
            (["--imu", "synthetic", "--duration", "soon"], "duration"),
            (["--imu", "synthetic", "--frobnicate"], "frobnicate"),
            (["--cam", "synthetic,fps=1e6"], "fps '1e6'"),
            (["--cam", "synthetic:640x480@abc"], "fps 'abc'"),
            (["--cam", "synthetic,buffers=1"], "buffers '1'"),
            (["--cam", "synthetic,size=0x0"], "size '0x0'"),
            (["--cam", "synthetic,size=99999x99999"], "size '99999x99999'"),
            (["--cam", "synthetic,id=cam,id=other"], "'id' is given twice"),
            (["--imu", "synthetic,rate=100,rate=200"], "'rate' is given twice"),
            (["--cam", "synthetic", "--cam", "synthetic,id=cam0"], "'cam0' is used twice"),
            (["--imu", "synthetic,id=x\u{7}y"], "'x\\u{07}y' cannot be used"),
            (["--imu", "synthetic", "--host-id", "a\nb"], "--host-id 'a\\nb'"),
            (["--imu", "synthetic", "--duration=-5s"], "duration"),
            (["--imu", "synthetic", "--duration", "1000h"], "duration"),
            (["--imu", "synthetic", "--sync-every", "0s"], "sync-every"),
            (["--imu", "synthetic", "--min-free", "lots"], "min-free"),
            (["--imu", "/dev/null"], "--imu /dev/null"),
            (["--imu", "synthetic", "--out", "/etc/hostname"], "already exists"),
            (["--imu", "synthetic", "--out", ""], "--out"),
            (["--imu", "synthetic", "--quiet", "--json"], "--quiet and --json"),
            (["--cam", "synthetic,stall=1s"], "stall is for V4L2"),
            (["--cam", "synthetic,encode=jpeg:0"], "encode 'jpeg:0': a JPEG quality is a whole number from 1 to 100"),
            (["--cam", "synthetic,encode=jpeg:high"], "encode 'jpeg:high'"),
            (["--cam", "synthetic,encode=webp"], "encode 'webp' is not an encoding; use raw"),
            (["--cam", "synthetic,encode=h264,encoder=/dev/null"], "/dev/null: VIDIOC_QUERYCAP"),
            (["--cam", "synthetic,encode=h264:fast"], "encode 'h264:fast': a bit rate is bits per second"),
            (["--cam", "synthetic,encode=h264:5"], "a bit rate is bits per second from 100k to 100M"),
            (["--cam", "synthetic,encode=fwht:3"], "FWHT takes no bit rate"),
            (["--cam", "synthetic,encode=h264,encoder=video11"], "encoder 'video11' is a device node"),
            (["--cam", "synthetic,encoder=/dev/video11"], "encoder=/dev/video11 names a hardware encoder"),
            (["--cam", "synthetic,format=H264"], "H264 is stored, not captured: add encode=h264"),
            (["--cam", "synthetic,format=MJPG,encode=h264,encoder=/dev/null"], "encode=h264 takes raw frames"),
            (["--cam", "synthetic,encode=ffv1:3"], "FFV1 is lossless and takes no quality"),
            (["--cam", "synthetic,format=FFV1"], "FFV1 is stored, not captured: add encode=ffv1"),
            (["--cam", "synthetic,format=MJPG,encode=ffv1"], "this camera sends MJPEG"),
            (["--cam", "synthetic,format=Y16,encode=jpeg"], "encode=jpeg takes 8-bit frames"),
            (["--cam", "synthetic,threads=2"], "threads=2 is for encoding threads; this camera is stored raw"),
            (["--cam", "synthetic,encode=jpeg,threads=0"], "threads '0' must be a whole number from 1 to 16"),
            (["--cam", "synthetic,encode=ffv1,threads=many"], "threads 'many'"),
            (["--cam", "synthetic,encode=fwht,threads=2"], "only jpeg and ffv1 take more threads"),
            (["--cam", "synthetic,format=BGRG"], "format 'BGRG' is not available"),
            (["--cam", "synthetic,format=BA81,encode=jpeg,size=64x47"], "64x47 has an odd side"),
            (["--imu", "iio:device0,stall=0s"], "stall '0s'"),
            (["--imu", "synthetic", "--max-storage", "1G"], "--max-storage needs --segment"),
            (["--imu", "synthetic", "--keep", "1h"], "--keep needs --segment"),
            (["--imu", "synthetic", "--segment", "soon"], "segment"),
            (["--imu", "synthetic", "--segment", "5s", "--max-storage", "0"], "--max-storage 0"),
            (["--cam", "synthetic:160x120@30", "--segment", "10ms"], "shorter than one frame of cam0"),
            (
                ["--cam", "synthetic:160x120@30", "--segment", "10s", "--max-storage", "1M"],
                "less than one 10s segment"
            ),
        ] as [([String], String)])
    func badInvocation(arguments: [String], expected: String) throws {
        let root = freshPath("record-bad")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let result = try FieldcapProcess.run(arguments + ["--root", root])
        #expect(result.status == 64, "\(arguments): status \(result.status)")
        let first = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.contains(expected), "\(arguments): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root))
    }

    @Test("--segment: a recording directory of sessions and its index, which validate checks segment by segment")
    func segmentedRecording() throws {
        let out = freshPath("record-segments")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try FieldcapProcess.run([
            "--cam", "synthetic:160x120@30", "--imu", "synthetic:100", "--segment", "1s", "--duration", "3500ms",
            "--out", out, "-q",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: out).sorted()
        #expect(names.last == "recording.json")
        let segments = names.dropLast()
        #expect(segments.count == 4, "\(names)")
        #expect(segments.first?.hasPrefix("00000001-") == true && segments.last?.hasPrefix("00000004-") == true)
        let validated = try FieldcapProcess.run(["validate", out])
        #expect(validated.status == 0)
        #expect(validated.stdout.contains("valid recording, 4 segments"), "\(validated.stdout)")
        // A segment that goes missing is a problem the index names.
        try FileManager.default.removeItem(atPath: "\(out)/\(segments[1])")
        let broken = try FieldcapProcess.run(["validate", out])
        #expect(broken.status == 1)
        #expect(broken.stdout.contains("\(segments[1]): listed as complete, but missing"), "\(broken.stdout)")
    }

    @Test("an output on a disk below --min-free is refused with one line and exit 4, and nothing is made")
    func belowMinimumFree() throws {
        let out = freshPath("record-min-free")
        let result = try FieldcapProcess.run(["--imu", "synthetic", "--out", out, "--min-free", "1000T"])
        #expect(result.status == 4)
        #expect(
            result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("below --min-free"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test("the session's files honour the umask and are never world-writable", arguments: ["077", "000"])
    func fileModes(umask: String) throws {
        let out = freshPath("record-umask")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "umask \(umask); exec \"$0\" \"$@\"", FieldcapProcess.executable.path,
            "--cam", "synthetic:160x120@30", "--imu", "synthetic:100", "--duration", "1s", "--out", out, "-q",
        ]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: out)
        #expect(names.count >= 7)
        for name in names + ["."] {
            let mode =
                (try FileManager.default.attributesOfItem(atPath: "\(out)/\(name)")[.posixPermissions] as! NSNumber)
                .intValue
            #expect(mode & 0o002 == 0, "\(name) is world-writable: \(String(mode, radix: 8))")
            if umask == "077" { #expect(mode & 0o077 == 0, "\(name) ignores the umask: \(String(mode, radix: 8))") }
        }
    }

    @Test("an --out that exists is refused and left as it was")
    func existingOutput() throws {
        let out = freshPath("record-existing")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: out) }
        try Data("keep".utf8).write(to: URL(fileURLWithPath: out + "/notes.txt"))
        let result = try FieldcapProcess.run(["--imu", "synthetic", "--duration", "1s", "--out", out])
        #expect(result.status == 64)
        #expect(result.stderr.contains("already exists"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["notes.txt"])
    }

    @Test("without --out, each session gets a new directory named after the host and the UTC time")
    func defaultDirectory() throws {
        let root = freshPath("record-root")
        defer { try? FileManager.default.removeItem(atPath: root) }
        for _ in 0..<2 {
            let result = try FieldcapProcess.run([
                "--imu", "synthetic:50", "--duration", "200ms", "--root", root, "--host-id", "rigA", "-q",
            ])
            #expect(result.status == 0, "\(result.stderr)")
        }
        let sessions = try FileManager.default.contentsOfDirectory(atPath: root).sorted()
        #expect(sessions.count == 2)
        #expect(sessions.allSatisfy { $0.hasPrefix("rigA-") && $0.contains("T") })
    }
}
