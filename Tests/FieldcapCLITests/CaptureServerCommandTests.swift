import Foundation
import TestSupport
import Testing

@Suite("fieldcap serve --server: an AllSpark-style capture server", .serialized)
struct CaptureServerCommandTests {
    /// Clients/capture_server.py (a stand-in written from what AllSpark's edge server does)
    /// drives the rig through that server's protocol and checks what the rig sends and what
    /// it stores; this test checks what the rig recorded meanwhile.
    @Test(
        """
        AllSpark's protocol: nothing answered, chunkSaved, Force Sync and autoUpload stored \
        under the server's limits, a refusal and a 1009 final, the server restarted: no gap
        """
    )
    func protocolAndReconnect() throws {
        let uploads = NSTemporaryDirectory() + "/capture-uploads-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: uploads) }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [
            "python3", ServeCommandTests.script("Clients/capture_server.py"), "--name", "rig-test-001", "--fieldcap",
            FieldcapProcess.executable.path, "--uploads", uploads,
        ]
        let input = Pipe(), output = Pipe()
        server.standardInput = input
        server.standardOutput = output
        server.standardError = output
        try server.run()
        defer { if server.isRunning { server.terminate() } }
        var first = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            first += byte
        }
        let port = try #require(String(decoding: first, as: UTF8.self).split(separator: " ").last.flatMap { Int($0) })

        let serve = try ServeProcess(
            ServeCommandTests.devices + [
                "--server", "ws://127.0.0.1:\(port)", "--name", "rig-test-001", "--server-max-message", "128K",
            ])
        input.fileHandleForWriting.write(Data("api \(serve.base)\n".utf8))
        let transcript = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        server.waitUntilExit()
        #expect(server.terminationStatus == 0, "\(transcript)\n\(serve.stderr)")
        #expect(transcript.contains("capture server: every step as expected"), "\(transcript)")
        let name = try #require(
            transcript.split(separator: "\n").first { $0.hasPrefix("recording ") }.map { String($0.dropFirst(10)) })

        // The rig told what happened, in its own words.
        #expect(serve.stderr.contains("connected to the capture server ws://127.0.0.1:\(port) as rig-test-001"))
        usleep(1_500_000)
        #expect(serve.terminate() == 0)

        // The recording the server started: its clientConfig's segments and budget, and no gap
        // across the 3 s the server was away (each segment starts where the one before ended).
        let directory = "\(serve.root)/\(name)"
        let index = try #require(
            FileManager.default.contents(atPath: "\(directory)/recording.json").flatMap {
                try JSONSerialization.jsonObject(with: $0) as? [String: Any]
            })
        #expect(index["segment_seconds"] as? Double == 1)
        #expect((index["max_storage_bytes"] as? NSNumber)?.uint64Value == 200 << 20)
        let segments = try #require(index["segments"] as? [[String: Any]])
        #expect(segments.count >= 5, "\(segments.count) segments")
        for (before, after) in zip(segments, segments.dropFirst()) {
            #expect((after["number"] as? Int) == (before["number"] as? Int).map { $0 + 1 })
            #expect(
                (after["start_monotonic_raw_ns"] as? NSNumber)?.uint64Value
                    == (before["end_monotonic_raw_ns"] as? NSNumber)?.uint64Value)
        }
        let validate = try FieldcapProcess.run(["validate", directory])
        #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
    }

    @Test("--server auto: the _allspark._tcp server a real avahi-daemon shows, in a network namespace")
    func discovery() throws {
        let work = NSTemporaryDirectory() + "/capture-discovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let run = try runTool(
            "unshare",
            [
                "--net", "--mount", "--pid", "--fork", "--mount-proc",
                ServeCommandTests.script("Netns/capture_server_discovery.sh"), FieldcapProcess.executable.path, work,
            ])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("capture server discovery: every step as expected"), "\(run.output)")
    }

    @Test("wss://: a self-signed server is refused, with why, unless --insecure")
    func tls() throws {
        let work = NSTemporaryDirectory() + "/capture-tls-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let made = try runTool(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(work)/key.pem", "-out",
                "\(work)/cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
            ])
        try #require(made.status == 0, "\(made.output)")
        // A wss:// server (Python's websockets over ssl) that notes each rig's first message.
        let server = try PythonPeer(
            script:
                """
                import asyncio, signal, ssl, sys, websockets
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(sys.argv[1], sys.argv[2])
                async def rig(socket):
                    with open(sys.argv[3], "a") as out:
                        out.write(await socket.recv() + "\\n")
                    await socket.wait_closed()
                async def main():
                    async with websockets.serve(rig, "127.0.0.1", 0, ssl=context) as server:
                        print("listening", server.sockets[0].getsockname()[1], flush=True)
                        await asyncio.sleep(60)
                asyncio.run(main())
                """,
            arguments: ["\(work)/cert.pem", "\(work)/key.pem", "\(work)/rigs.txt"])
        // Held to the end of the test: released earlier, it would end the peer.
        defer { withExtendedLifetime(server) {} }
        let port = server.port

        // A certificate names a host: checked, the server is given by name.
        let checked = try ServeProcess(ServeCommandTests.devices + ["--server", "wss://localhost:\(port)"])
        var server1: [String: Any] = [:]
        for _ in 0..<100 {
            server1 = try checked.request("GET", "/api/v1/status").json["server"] as? [String: Any] ?? [:]
            if (server1["last_error"] as? String)?.isEmpty == false { break }
            usleep(100_000)
        }
        #expect(server1["state"] as? String != "connected" && server1["state"] as? String != "connected_securely")
        #expect((server1["last_error"] as? String)?.contains("certificate is not trusted") == true, "\(server1)")
        #expect(checked.stderr.contains("a self-signed test server needs --insecure"), "\(checked.stderr)")
        _ = checked.terminate()

        let insecure = try ServeProcess(
            ServeCommandTests.devices + ["--server", "wss://127.0.0.1:\(port)", "--insecure", "--name", "tls-rig"])
        var state = ""
        for _ in 0..<100 where state != "connected" {
            state =
                try insecure.request("GET", "/api/v1/status").json["server"].flatMap {
                    ($0 as? [String: Any])?["state"] as? String
                } ?? ""
            usleep(100_000)
        }
        // Encrypted, but the certificate unchecked: connected, not connected_securely.
        #expect(state == "connected")
        let rigs = (try? String(contentsOfFile: "\(work)/rigs.txt", encoding: .utf8)) ?? ""
        // Only the rig that skipped the check got through: the checking one never said a word.
        #expect(rigs.split(separator: "\n").count == 1 && rigs.contains("\"clientName\":\"tls-rig\""), "\(rigs)")
        _ = insecure.terminate()
    }

    /// A peer of `black_hole.py` in one mode; its output goes to a file the test reads.
    final class BlackHole {
        let process = Process()
        let work = NSTemporaryDirectory() + "/black-hole-\(UUID().uuidString)"
        var log: String { (try? String(contentsOfFile: "\(work)/peer.log", encoding: .utf8)) ?? "" }
        var port = 0

        init(_ mode: String) throws {
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: "\(work)/peer.log", contents: nil)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", ServeCommandTests.script("Clients/black_hole.py"), mode, work]
            process.standardOutput = FileHandle(forWritingAtPath: "\(work)/peer.log")
            process.standardError = process.standardOutput
            try process.run()
            try waitFor("listening ", within: 20)
            port =
                log.split(separator: "\n").first { $0.hasPrefix("listening ") }
                .flatMap { Int($0.split(separator: " ")[1]) } ?? 0
        }

        func waitFor(_ text: String, within seconds: Double) throws {
            let deadline = Date().addingTimeInterval(seconds)
            while !log.contains(text) {
                guard Date() < deadline, process.isRunning else {
                    throw ServeProcess.ServeFailure(description: "the peer did not say \(text): \(log)")
                }
                usleep(50_000)
            }
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: work)
        }
    }

    /// Each outbound client stuck on a peer that never lets it finish connecting: SIGTERM still
    /// finishes the recording (a session `fieldcap validate` accepts) and ends the process
    /// within 5 s.
    @Test(
        "SIGTERM ends a valid recording within 5 s whatever a peer does",
        arguments: [
            ("silent", "--server"), ("tls", "--server"), ("midway", "--server"), ("silent", "--mqtt"),
        ])
    func stuckPeers(mode: String, client: String) throws {
        let peer = try BlackHole(mode)
        let url = client == "--mqtt" ? "mqtt://127.0.0.1:\(peer.port)" : "ws://127.0.0.1:\(peer.port)"
        let serve = try ServeProcess(ServeCommandTests.devices + [client, url])
        let started = try serve.request("POST", "/api/v1/recording/start")
        #expect(started.status == 200 || started.status == 201, "\(started.text)")
        try peer.waitFor("accepted", within: 20)
        if client == "--server" && mode != "midway" {
            // Stuck where it was seen to hang: connected over TCP, no WebSocket yet.
            let server = try serve.request("GET", "/api/v1/status").json["server"] as? [String: Any]
            #expect(server?["state"] as? String == "connecting", "\(server ?? [:])")
        }
        usleep(700_000)
        let sent = Date()
        serve.process.terminate()
        while serve.process.isRunning && Date().timeIntervalSince(sent) < 15 { usleep(20_000) }
        let took = Date().timeIntervalSince(sent)
        if serve.process.isRunning { kill(serve.process.processIdentifier, SIGKILL) }
        serve.process.waitUntilExit()
        #expect(took < 5, "\(mode) \(client): SIGTERM took \(took) s\n\(serve.stderr)")
        #expect(serve.process.terminationStatus == 0, "\(serve.stderr)")
        let sessions = serve.sessionNames().filter { !$0.hasPrefix(".") }
        #expect(sessions.count == 1, "\(sessions)")
        for name in sessions {
            let validate = try FieldcapProcess.run(["validate", "\(serve.root)/\(name)"])
            #expect(validate.status == 0, "\(mode) \(client): \(validate.stdout)\(validate.stderr)")
        }
    }

    /// An HTTP client that asks for the endless MJPEG preview and never reads it, so the
    /// server's writes wait on it: SIGTERM still ends a valid recording within 5 s.
    @Test("SIGTERM ends a valid recording within 5 s while an HTTP client does not read")
    func unreadHTTPClient() throws {
        let serve = try ServeProcess(ServeCommandTests.devices)
        let started = try serve.request("POST", "/api/v1/recording/start")
        #expect(started.status == 200 || started.status == 201, "\(started.text)")
        let port = try #require(serve.base.split(separator: ":").last.flatMap { Int($0) })
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        client.arguments = [
            "python3", "-c",
            """
            import socket, sys, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            port = int(sys.argv[1])
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /api/v1/preview/cam0.mjpg HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % port)
            # The stream's head, then no more reading: the rig's writes fill the buffers.
            head = s.recv(64)
            print("asked" if head.startswith(b"HTTP/1.1 200") else "refused", flush=True)
            time.sleep(60)
            """, "\(port)",
        ]
        let output = Pipe()
        client.standardOutput = output
        try client.run()
        defer { client.terminate() }
        let answer = try output.fileHandleForReading.read(upToCount: 6).map { String(decoding: $0, as: UTF8.self) }
        #expect(answer == "asked\n", "the preview stream did not start: \(answer ?? "nothing")")
        // Long enough for the preview's frames to fill the socket's buffers.
        usleep(1_500_000)
        let sent = Date()
        serve.process.terminate()
        while serve.process.isRunning && Date().timeIntervalSince(sent) < 15 { usleep(20_000) }
        let took = Date().timeIntervalSince(sent)
        if serve.process.isRunning { kill(serve.process.processIdentifier, SIGKILL) }
        serve.process.waitUntilExit()
        #expect(took < 5, "SIGTERM took \(took) s\n\(serve.stderr)")
        let sessions = serve.sessionNames().filter { !$0.hasPrefix(".") }
        #expect(sessions.count == 1, "\(sessions)")
        for name in sessions {
            let validate = try FieldcapProcess.run(["validate", "\(serve.root)/\(name)"])
            #expect(validate.status == 0, "\(validate.stdout)\(validate.stderr)")
        }
    }

    /// A range inside one segment that alone is over the limit: not sent, with why, and not
    /// tried again; the server sees no upload at all.
    @Test("a single segment over the server's message limit is refused with a clear reason, never sent")
    func segmentOverTheLimit() throws {
        let work = NSTemporaryDirectory() + "/capture-limit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        // A server that asks for 0.5 s of the first segment once two have closed, and notes every
        // message the rig sends.
        let server = try PythonPeer(
            script:
                """
                import asyncio, json, signal, sys, time, websockets
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                async def rig(socket):
                    await socket.send(json.dumps({"type": "clientConfig", "config": {"videoChunkDurationMs": 1000}}))
                    await socket.send(json.dumps({"command": "record", "message": ""}))
                    with open(sys.argv[1], "a") as out:
                        async for message in socket:
                            data = json.loads(message) if isinstance(message, str) else {"binary": len(message)}
                            out.write(json.dumps(data) + "\\n")
                            out.flush()
                            if data.get("type") == "chunkSaved":
                                start = data["startTime"]
                                await socket.send(json.dumps({"command": "uploadTimeRange", "message": "",
                                                              "startTime": start, "endTime": start + 0.5}))
                async def main():
                    async with websockets.serve(rig, "127.0.0.1", 0, max_size=None) as server:
                        print("listening", server.sockets[0].getsockname()[1], flush=True)
                        await asyncio.sleep(60)
                asyncio.run(main())
                """,
            arguments: ["\(work)/messages.txt"])
        // Held to the end of the test: released earlier, it would end the peer.
        defer { withExtendedLifetime(server) {} }
        let port = server.port
        let serve = try ServeProcess(
            ServeCommandTests.devices + ["--server", "ws://127.0.0.1:\(port)", "--server-max-message", "1K"])
        var link: [String: Any] = [:]
        for _ in 0..<150 {
            link = try serve.request("GET", "/api/v1/status").json["server"] as? [String: Any] ?? [:]
            if (link["upload_failures"] as? Int ?? 0) > 0 { break }
            usleep(100_000)
        }
        // Every chunkSaved asks for a range: the first failure is enough; the rest may follow.
        #expect((link["upload_failures"] as? Int ?? 0) >= 1, "\(link)")
        let why = link["last_upload_failure"] as? String ?? ""
        #expect(why.contains("not sent:") && why.contains("one segment"), "\(why)")
        #expect(why.contains("over the server's 1024-byte message limit"), "\(why)")
        let messages = (try? String(contentsOfFile: "\(work)/messages.txt", encoding: .utf8)) ?? ""
        #expect(messages.contains("\"chunkSaved\""), "\(messages)")
        #expect(!messages.contains("\"upload\"") && !messages.contains("binary"), "\(messages)")
        #expect(serve.terminate() == 0)
    }

    @Test(
        """
        a recording without segments is one chunk: chunkSaved \
        when it stops, and with autoUpload its MP4 and tar stored
        """
    )
    func unsegmentedRecordingIsOneChunk() throws {
        let work = NSTemporaryDirectory() + "/capture-whole-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        // As AllSpark's server with autoUpload: each chunkSaved asked for at once; every message
        // noted, each upload's file kept by its name.
        let server = try PythonPeer(script: Self.autoUploadServer, arguments: [work])
        // Held to the end of the test: released earlier, it would end the peer.
        defer { withExtendedLifetime(server) {} }
        let port = server.port
        let serve = try ServeProcess(ServeCommandTests.devices + ["--server", "ws://127.0.0.1:\(port)"])
        try Self.recordTwoSecondsAndAwaitUploads(serve, seconds: 15)
        let messages = ((try? String(contentsOfFile: "\(work)/messages.txt", encoding: .utf8)) ?? "")
            .split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        let chunks = messages.filter { $0["type"] as? String == "chunkSaved" }
        #expect(chunks.count == 1, "\(messages)")
        if let chunk = chunks.first, let from = chunk["startTime"] as? Double, let to = chunk["endTime"] as? Double {
            #expect(to - from > 1.5 && to - from < 4, "\(chunk)")
            #expect(chunk["camera"] as? String == "cam0" && chunk["format"] as? String == "mp4", "\(chunk)")
        }
        let names = messages.filter { $0["type"] as? String == "upload" }.compactMap { $0["filename"] as? String }
        #expect(names.count == 2 && names[0].hasSuffix(".mp4") && names[1].hasSuffix(".tar"), "\(names)")
        if let video = names.first {
            let probe = try runExecutable(
                "/usr/bin/ffprobe",
                [
                    "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of",
                    "csv=p=0",
                    "\(work)/\(video)",
                ])
            let fields = probe.output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",")
            #expect(
                fields.first == "h264" && (fields.last.flatMap { Int($0) } ?? 0) >= 45, "\(probe.output)"
            )
        }
        #expect(serve.terminate() == 0)
    }

    /// Once the rig is connected to the server, a 2 s recording started through the API, and
    /// its uploads (an MP4 a camera, the tar: `uploads`) awaited for up to `seconds`.
    static func recordTwoSecondsAndAwaitUploads(_ serve: ServeProcess, seconds: Int, uploads: Int = 2) throws {
        for _ in 0..<100
        where (try serve.request("GET", "/api/v1/status").json["server"] as? [String: Any])?["state"]
            as? String != "connected"
        { usleep(100_000) }
        let started = try serve.request("POST", "/api/v1/recording/start", body: "{\"duration\":\"2s\"}")
        #expect(started.status == 200 || started.status == 201, "\(started.body)")
        var link: [String: Any] = [:]
        for _ in 0..<(seconds * 10) {
            link = try serve.request("GET", "/api/v1/status").json["server"] as? [String: Any] ?? [:]
            if (link["uploads"] as? Int ?? 0) >= uploads { break }
            usleep(100_000)
        }
        #expect(link["uploads"] as? Int == uploads, "\(link)")
    }

    /// As AllSpark's server with autoUpload: each chunkSaved asked for at once; every message
    /// noted in ARGV[1]/messages.txt, each upload's file kept there by its name.
    static let autoUploadServer =
        """
        import asyncio, json, os, signal, sys, websockets
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        async def rig(socket):
            await socket.send(json.dumps({"type": "clientConfig", "config": {"videoChunkDurationMs": 1000}}))
            metadata = None
            with open(os.path.join(sys.argv[1], "messages.txt"), "a") as out:
                async for message in socket:
                    if isinstance(message, bytes):
                        with open(os.path.join(sys.argv[1], metadata["filename"]), "wb") as f:
                            f.write(message)
                        await socket.send(json.dumps({"status": "success", "message": "Video uploaded \
        successfully"}))
                        continue
                    data = json.loads(message)
                    out.write(json.dumps(data) + "\\n")
                    out.flush()
                    if data.get("type") == "upload":
                        metadata = data
                    if data.get("type") == "chunkSaved":
                        await socket.send(json.dumps({"status": "success", "message": "Chunk saved info \
        received"}))
                        await socket.send(json.dumps({"command": "uploadTimeRange", "startTime": \
        data["startTime"],
                                                      "endTime": data["endTime"]}))
        async def main():
            async with websockets.serve(rig, "127.0.0.1", 0, max_size=None) as server:
                print("listening", server.sockets[0].getsockname()[1], flush=True)
                await asyncio.sleep(60)
        asyncio.run(main())
        """

    @Test(
        """
        upload_blur_faces in the rig's config: each MP4 the server stores, a raw camera's and an \
        MJPEG one's, shows no face OpenCV's cascade finds (a plain export of the recording shows \
        it), and no video goes as recorded; without the detector the rig stops at its start
        """
    )
    func blurredUploads() throws {
        let work = NSTemporaryDirectory() + "/capture-faces-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let config = "\(work)/rig.yaml"
        let picture = FacesExportTests.astronaut
        try """
        upload_blur_faces: true
        cameras:
          - device: synthetic:800x600@10
            id: cam0
            format: YUYV
            picture: \(picture)
          - device: synthetic:640x512@10
            id: mj
            format: YUYV
            encode: jpeg
            picture: \(picture)
        """.write(toFile: config, atomically: true, encoding: .utf8)
        // The config asks, the detector is missing: said at the start, naming the config's key.
        let missing = try FieldcapProcess.run(
            ["serve", "--config", config, "--server", "ws://127.0.0.1:9"],
            environment: ["FIELDCAP_FACE_DETECTOR": "\(work)/none.so"])
        #expect(missing.status == 64, "\(missing.stderr)")
        #expect(
            missing.stderr.contains(
                "upload_blur_faces in \(config): the face detector's library libFieldcapFaceDetector.so is not installed"
            ),
            "\(missing.stderr)")

        let server = try PythonPeer(script: Self.autoUploadServer, arguments: [work])
        defer { withExtendedLifetime(server) {} }
        let serve = try ServeProcess(["--config", config, "--server", "ws://127.0.0.1:\(server.port)"])
        try Self.recordTwoSecondsAndAwaitUploads(serve, seconds: 45, uploads: 3)
        let stored = try FileManager.default.contentsOfDirectory(atPath: work)
        let tar = try #require(stored.first { $0.hasSuffix(".tar") }, "\(stored)")
        let listing = try runExecutable("/usr/bin/tar", ["-tf", "\(work)/\(tar)"]).output
        #expect(!listing.contains(".mkv") && listing.contains("cam0.faces_covered.json"), "\(listing)")
        #expect(listing.contains("mj.faces_covered.json"), "\(listing)")
        // The recording itself, exported plain: the face is there to be covered.
        let recording = try #require(
            try FileManager.default.contentsOfDirectory(atPath: serve.root).first { !$0.hasPrefix(".") })
        let plain = try FieldcapProcess.run(
            ["export", "\(serve.root)/\(recording)", "--format", "mp4", "--out", "\(work)/plain"])
        #expect(plain.status == 0, "\(plain.stderr)")
        for camera in ["cam0", "mj"] {
            let video = try #require(stored.first { $0.hasSuffix(".mp4") && $0.contains("-\(camera)_") }, "\(stored)")
            let verdict = try ExportCommandTests.judge(
                ["mp4", "\(work)/plain/\(camera).mp4", "\(work)/\(video)"], checker: "faces_check.py",
                python: FacesExportTests.debianPython)
            #expect(verdict.passed, "\(camera): \(verdict.output)")
        }
        #expect(serve.terminate() == 0)
    }

    @Test("--server refuses what is not a WebSocket URL; --name without --server is a usage error")
    func refusals() throws {
        let bad = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--server", "http://x:1"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--server 'http://x:1': give the capture server as ws://HOST:PORT"))
        let address = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--server", "wss://10.0.0.7:8443"])
        #expect(address.status == 64)
        #expect(address.stderr.contains("give its name (wss://NAME:PORT), or --insecure"), "\(address.stderr)")
        for option in [["--name", "rig"], ["--blur-faces"]] {
            let lonely = try FieldcapProcess.run(["serve", "--cam", "synthetic"] + option)
            #expect(lonely.status == 64)
            #expect(
                lonely.stderr.contains(
                    "--insecure, --name, --server-max-message and --blur-faces are for a capture server"),
                "\(lonely.stderr)")
        }
    }
}

/// A peer written in Python for one test (`python3 -c SCRIPT ARGUMENTS...`), whose first line of
/// output is `listening PORT`; terminated when released.
final class PythonPeer {
    let process = Process()
    let port: Int

    init(script: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        guard let port = String(decoding: line, as: UTF8.self).split(separator: " ").last.flatMap({ Int($0) }) else {
            process.terminate()
            process.waitUntilExit()
            throw ServeProcess.ServeFailure(
                description: "the Python peer did not say its port: \(String(decoding: line, as: UTF8.self))")
        }
        self.port = port
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }
}
