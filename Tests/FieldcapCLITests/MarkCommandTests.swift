import Foundation
import TestSupport
import Testing

/// `fieldcap mark ARGUMENTS` once a recording runs there: tried again while none does (exit 69),
/// for up to 15 s; the last run.
func markWhenRunning(_ arguments: [String]) -> FieldcapProcess? {
    var last: FieldcapProcess?
    for _ in 0..<300 {
        last = try? FieldcapProcess.run(["mark"] + arguments)
        if last?.status != 69 { return last }
        usleep(50_000)
    }
    return last
}

/// The recording directory directly under `root`, once there is one (up to 15 s).
private func firstDirectory(under root: String) -> String? {
    for _ in 0..<300 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        if let name = names.first { return "\(root)/\(name)" }
        usleep(50_000)
    }
    return nil
}

private func jsonObject(_ data: Data) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

@Suite("fieldcap mark, extract --mark and the API's marks", .serialized)
struct MarkCommandTests: ServeSuite {
    @Test(
        """
        fieldcap mark on a segmented recording: the mark in recording.json, the segment's events.ndjson, \
        fieldcap sessions; extract --mark writes its window; bad marks get one clear line
        """
    )
    func markARecording() throws {
        let root = freshPath("mark-root")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }

        // Nothing records there yet.
        let none = try FieldcapProcess.run(["mark", root, "near-miss"])
        #expect(none.status == 69)
        #expect(none.stderr.contains("no recording is running in \(root)"), "\(none.stderr)")
        let bell = try FieldcapProcess.run(["mark", root, "bell\u{07}"])
        #expect(bell.status == 64)
        #expect(bell.stderr.contains("label: control character U+0007 at position 5"), "\(bell.stderr)")
        let window = try FieldcapProcess.run(["mark", root, "x", "--before", "2d"])
        #expect(window.status == 64)
        #expect(window.stderr.contains("'2d' is not a window"), "\(window.stderr)")

        var marked: FieldcapProcess?
        var wide: FieldcapProcess?
        var directory: String?
        let recording = try FieldcapProcess.run([
            "record", "--root", root, "--cam", "synthetic:160x120@30", "--imu", "synthetic:200", "--segment", "1s",
            "--max-storage", "12M", "--duration", "6s", "-q",
        ]) { _ in
            directory = firstDirectory(under: root)
            usleep(1_500_000)
            marked = markWhenRunning([root, "near-miss", "--note", "cup slipped", "--before", "1s", "--after", "1s"])
            wide = try? FieldcapProcess.run(["mark", directory ?? root, "wide", "--before", "1h"])
        }
        #expect(recording.status == 0, "\(recording.stderr)")
        let recordingDirectory = try #require(directory)
        let taken = try #require(marked)
        #expect(taken.status == 0, "\(taken.stderr)")
        #expect(taken.stdout.hasPrefix("marked m1 \"near-miss\" at "), "\(taken.stdout)")
        #expect(taken.stdout.contains("window 1 s before, 1 s after"))
        let refused = try #require(wide)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("more than the budget (--max-storage 12.0M) holds"), "\(refused.stderr)")
        // Nothing is left that a mark could reach.
        #expect(try FieldcapProcess.run(["mark", recordingDirectory, "late"]).status == 69)

        let index = try jsonObject(try Data(contentsOf: URL(fileURLWithPath: recordingDirectory + "/recording.json")))
        let marks = try #require(index["marks"] as? [[String: Any]])
        #expect(marks.count == 1)
        let mark = try #require(marks.first)
        #expect(mark["id"] as? String == "m1" && mark["label"] as? String == "near-miss")
        #expect(mark["note"] as? String == "cup slipped" && mark["source"] as? String == "command")
        let captureNs = try #require((mark["capture_ns"] as? NSNumber)?.uint64Value)
        // Its line is in the segment its instant falls in, and no other.
        let segments = try #require(index["segments"] as? [[String: Any]])
        var lines: [String] = []
        for segment in segments {
            let name = try #require(segment["directory"] as? String)
            let start = try #require((segment["start_monotonic_raw_ns"] as? NSNumber)?.uint64Value)
            let end = try #require((segment["end_monotonic_raw_ns"] as? NSNumber)?.uint64Value)
            let events = recordingDirectory + "/\(name)/events.ndjson"
            let here = start <= captureNs && captureNs < end
            #expect(FileManager.default.fileExists(atPath: events) == here, "\(name)")
            if here {
                lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map(String.init)
            }
        }
        #expect(lines.count == 1)
        let line = try jsonObject(Data(try #require(lines.first).utf8))
        #expect(line["event"] as? String == "mark" && line["id"] as? String == "m1")
        #expect((line["capture_ns"] as? NSNumber)?.uint64Value == captureNs)
        #expect(line["utc"] as? String == mark["utc"] as? String)

        let listed = try FieldcapProcess.run(["sessions", root])
        #expect(listed.stdout.contains("1 mark: m1 near-miss"), "\(listed.stdout)")
        let json = try FieldcapProcess.run(["sessions", root, "--json"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect((entries.first?["marks"] as? [[String: Any]])?.first?["label"] as? String == "near-miss")

        // Its window, as a session of its own: 2 s of 30 fps and 200 Hz.
        let clip = root + "/clip"
        let extracted = try FieldcapProcess.run(["extract", root, "--mark", "near-miss", "--out", clip])
        #expect(extracted.status == 0, "\(extracted.stdout)\(extracted.stderr)")
        #expect(extracted.stdout.contains("mark m1 \"near-miss\" at"), "\(extracted.stdout)")
        #expect(extracted.stdout.contains("valid SyncField 0.1 session"), "\(extracted.stdout)")
        let manifest = try jsonObject(try Data(contentsOf: URL(fileURLWithPath: clip + "/manifest.json")))
        let streams = try #require(manifest["streams"] as? [String: [String: Any]])
        let frames = try #require(streams["cam0"]?["frame_count"] as? Int)
        let samples = try #require(streams["imu0"]?["frame_count"] as? Int)
        // A busy machine's synthetic camera may skip a few (MarkedRecordingTests holds extracts to
        // exactly their windows' records).
        #expect((50...61).contains(frames), "\(frames) frames in a 2 s window at 30 fps")
        #expect((380...401).contains(samples), "\(samples) samples in a 2 s window at 200 Hz")
        let unknown = try FieldcapProcess.run(["extract", recordingDirectory, "--mark", "m9", "--out", root + "/none"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no mark \"m9\"; its marks: m1 near-miss"), "\(unknown.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root + "/none"))
        let both = try FieldcapProcess.run([
            "extract", root, "--mark", "m1", "--from", "2026-11-23T14:02:00Z", "--out", root + "/none",
        ])
        #expect(both.status == 64)
    }

    @Test(
        """
        a recorder killed after a mark: recover keeps the mark's line and puts a mark the index missed \
        back into it; a mark from another user is refused
        """
    )
    func recoverKeepsMarks() throws {
        let root = freshPath("mark-killed")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        for segmented in [false, true] {
            let out = root + (segmented ? "/segmented" : "/session")
            _ = try FieldcapProcess.run(
                ["record", "--out", out, "--cam", "synthetic:64x48@30", "--imu", "synthetic:200", "-q"]
                    + (segmented ? ["--segment", "1s"] : [])
            ) { process in
                let marked = markWhenRunning([out, "before-the-crash"])
                #expect(marked?.status == 0, "\(marked?.stderr ?? "")")
                if !segmented {
                    // Another user reaches the recording's socket (it is in no file) and is refused.
                    let stranger = try? runExecutable(
                        "/usr/bin/setpriv",
                        [
                            "--reuid=65534", "--regid=65534", "--clear-groups", FieldcapProcess.executable.path,
                            "mark", out, "not-yours",
                        ])
                    #expect(stranger?.status == 1, "\(stranger?.output ?? "")")
                    #expect(
                        stranger?.output.contains("only the user recording (uid \(getuid())), its group")
                            == true, "\(stranger?.output ?? "")")
                    // A member of the recorder's group (as an operator in a rig's fieldcap group) marks.
                    let member = try? runExecutable(
                        "/usr/bin/setpriv",
                        [
                            "--reuid=65534", "--regid=65534", "--groups=\(getegid())", FieldcapProcess.executable.path,
                            "mark", out, "group-member",
                        ])
                    #expect(member?.status == 0, "\(member?.output ?? "")")
                }
                usleep(300_000)
                kill(process.processIdentifier, SIGKILL)
            }
            if segmented {
                // As if killed between the mark's line and the index's write.
                let path = out + "/recording.json"
                var index = try jsonObject(try Data(contentsOf: URL(fileURLWithPath: path)))
                #expect((index["marks"] as? [Any])?.count == 1)
                index["marks"] = nil
                try JSONSerialization.data(withJSONObject: index).write(to: URL(fileURLWithPath: path))
            }
            let recovered = try FieldcapProcess.run(["recover", out])
            #expect(recovered.status == 0, "\(recovered.stdout)\(recovered.stderr)")
            let listed = try FieldcapProcess.run(["sessions", root])
            let expected = segmented ? "1 mark: m1 before-the-crash" : "2 marks: m1 before-the-crash, m2 group-member"
            #expect(listed.stdout.contains(expected), "\(listed.stdout)")
            if segmented {
                #expect(
                    recovered.stdout.contains("marks m1: taken from the segments into the index"), "\(recovered.stdout)"
                )
            }
            #expect(try FieldcapProcess.run(["validate", out]).status == 0)
        }
    }

    @Test("fieldcap record started with & from an interactive shell leaves the terminal alone and records to its end")
    func inTheBackground() throws {
        let root = freshPath("mark-background")
        defer { try? FileManager.default.removeItem(atPath: root) }
        // An interactive bash on a pseudo-terminal: a job started with & is not the terminal's
        // foreground job, and changing the terminal's mode from there would stop it (SIGTTOU).
        let script = """
            import os, pty, select, sys, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv("/bin/bash", ["bash", "--norc", "--noprofile", "-i"])
            out = b""
            def pump(seconds):
                global out
                end = time.time() + seconds
                while time.time() < end:
                    if select.select([fd], [], [], 0.05)[0]:
                        try:
                            out += os.read(fd, 65536)
                        except OSError:
                            return
            pump(0.5)
            command = sys.argv[1] + " record --root " + sys.argv[2] + " --cam synthetic:64x48@30 --duration 2s"
            os.write(fd, (command + " >/dev/null 2>&1 & wait; echo JOB-ENDED-$?\\n").encode())
            deadline = time.time() + 15
            while b"JOB-ENDED-" not in out.replace(b"echo JOB-ENDED-", b"") and time.time() < deadline:
                pump(0.2)
            os.write(fd, b"exit\\n")
            pump(0.5)
            sys.stdout.write(out.decode(errors="replace"))
            """
        let run = try runTool("python3", ["-c", script, FieldcapProcess.executable.path, root])
        #expect(run.output.contains("JOB-ENDED-0"), "\(run.output)")
        #expect(!run.output.contains("Stopped"), "\(run.output)")
    }

    @Test(
        "the m key where fieldcap record runs on a terminal marks the moment; other keys do nothing; the terminal is given back"
    )
    func keyOnTheTerminal() throws {
        let root = freshPath("mark-key")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        // A real terminal (a pseudo-terminal Python opens), keys typed into it as a person would.
        let script = """
            import os, pty, select, sys, termios, time
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(sys.argv[1], sys.argv[1:])
            out = b""
            def pump(seconds):
                global out
                end = time.time() + seconds
                while time.time() < end:
                    if select.select([fd], [], [], 0.05)[0]:
                        try:
                            out += os.read(fd, 65536)
                        except OSError:
                            return
            pump(0.1)
            while b"press m to mark" not in out and len(out) < 1 << 20:
                pump(0.2)
            pump(0.5)
            os.write(fd, b"x")
            pump(0.5)
            os.write(fd, b"m")
            pump(4)
            _, status = os.waitpid(pid, 0)
            lflag = termios.tcgetattr(fd)[3]
            sys.stdout.write(out.decode(errors="replace"))
            print("\\nrestored", bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO))
            print("\\nexit", os.WEXITSTATUS(status))
            """
        let run = try runTool(
            "python3",
            [
                "-c", script, FieldcapProcess.executable.path, "record", "--root", root, "--cam",
                "synthetic:64x48@30", "--segment", "1s", "--duration", "4s",
            ])
        #expect(run.output.contains("press m to mark this moment"), "\(run.output)")
        #expect(run.output.contains("marked m1 \"key\" (key)"), "\(run.output)")
        #expect(run.output.contains("exit 0"), "\(run.output)")
        // Canonical mode and echo, as the terminal had them before.
        #expect(run.output.contains("restored True"), "\(run.output)")
        // The x typed before did nothing: one mark.
        #expect(!run.output.contains("m2"), "\(run.output)")
        let listed = try FieldcapProcess.run(["sessions", root])
        #expect(listed.stdout.contains("1 mark: m1 key"), "\(listed.stdout)")
    }

    @Test(
        """
        serve: POST /api/v1/marks refused while idle, taken while recording (and by fieldcap mark), \
        listed by GET /api/v1/marks, the status and the session; bad bodies are 400s
        """
    )
    func marksOverTheAPI() throws {
        let serve = try ServeProcess(["--cam", "synthetic:160x120@15", "--imu", "synthetic:100", "--segment", "1s"])
        let idle = try serve.request("POST", "/api/v1/marks", body: #"{"label":"too-early"}"#)
        #expect(idle.status == 409)
        #expect(String(decoding: idle.body, as: UTF8.self).contains("no recording is running"))
        let started = try serve.request("POST", "/api/v1/recording/start")
        #expect(started.status == 201)
        let name = try #require(try jsonObject(started.body)["name"] as? String)
        let marked = try serve.request(
            "POST", "/api/v1/marks", body: #"{"label":"api-mark","note":"by hand","before":"2s","after":0}"#)
        #expect(marked.status == 201, "\(String(decoding: marked.body, as: UTF8.self))")
        let answer = try jsonObject(marked.body)
        #expect(answer["recording"] as? String == name)
        let mark = try #require(answer["mark"] as? [String: Any])
        #expect(mark["id"] as? String == "m1" && mark["source"] as? String == "api")
        #expect(mark["before_seconds"] as? Double == 2 && mark["after_seconds"] as? Double == 0)
        for (body, says) in [
            (#"{"label":"bell\u0007"}"#, "label: control character U+0007"),
            (#"{"label":"   "}"#, "label: empty"),
            (#"{"label":"x","before":-1}"#, "before must be seconds from 0 to 86400"),
            (#"{"label":"x","colour":"red"}"#, "unknown field 'colour'"),
            (#"{"note":"no label"}"#, "label must be a string"),
            (#"["label"]"#, "the body must be a JSON object"),
        ] {
            let reply = try serve.request("POST", "/api/v1/marks", body: body)
            #expect(reply.status == 400, "\(body)")
            #expect(String(decoding: reply.body, as: UTF8.self).contains(says), "\(body): \(reply.body)")
        }
        let command = try FieldcapProcess.run(["mark", serve.root, "from-the-shell"])
        #expect(command.status == 0, "\(command.stderr)")
        #expect(command.stdout.hasPrefix("marked m2 \"from-the-shell\""), "\(command.stdout)")
        let listed = try jsonObject(try serve.request("GET", "/api/v1/marks").body)
        #expect(listed["recording"] as? String == name)
        #expect(
            (listed["marks"] as? [[String: Any]])?.compactMap { $0["label"] as? String } == [
                "api-mark", "from-the-shell",
            ])
        let status = try jsonObject(try serve.request("GET", "/api/v1/status").body)
        #expect((status["recording"] as? [String: Any])?["marks"] as? Int == 2)
        #expect(try serve.request("POST", "/api/v1/recording/stop").status == 200)
        let session = try jsonObject(try serve.request("GET", "/api/v1/sessions/\(name)").body)
        #expect((session["marks"] as? [[String: Any]])?.count == 2)
        let after = try jsonObject(try serve.request("GET", "/api/v1/marks").body)
        #expect(after["recording"] is NSNull || after["recording"] == nil)
        #expect(serve.terminate() == 0)
    }
}
