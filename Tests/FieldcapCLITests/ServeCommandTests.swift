import Foundation
import Synchronization
import TestSupport
import Testing

/// A `fieldcap serve` process on a free loopback port, spoken to with curl (a client nobody
/// here wrote), stopped with SIGTERM.
final class ServeProcess {
    let process = Process()
    let root: String
    let stderrPath: String
    var base = ""
    var token: String?
    /// Where its SCMF listener is (each test's own port: `--scmf 127.0.0.1:0` unless given).
    var scmfPort: Int?

    /// `launcher` runs it (`prlimit --nofile=...`), with the executable as its last argument.
    init(_ arguments: [String], root: String? = nil, listen: String = "127.0.0.1:0", launcher: [String] = []) throws {
        self.root = root ?? NSTemporaryDirectory() + "/serve-\(UUID().uuidString)"
        stderrPath = NSTemporaryDirectory() + "/serve-\(UUID().uuidString).log"
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = launcher.first.map { URL(fileURLWithPath: $0) } ?? FieldcapProcess.executable
        process.arguments =
            launcher.dropFirst() + (launcher.isEmpty ? [] : [FieldcapProcess.executable.path])
            + ["serve", "--listen", listen, "--root", self.root] + arguments
            + (arguments.contains("--scmf") ? [] : ["--scmf", "127.0.0.1:0"])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        // "serving 2 devices on http://127.0.0.1:PORT (...)" once it listens.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline && process.isRunning {
            if let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("serving ") }),
                let url = line.split(separator: " ").first(where: { $0.hasPrefix("http://") })
            {
                base = String(url)
                // "SCMF v1 preview of cam0 on tcp://127.0.0.1:PORT", before it.
                if let scmf = stderr.split(separator: "\n").first(where: { $0.hasPrefix("SCMF v1 ") }),
                    let address = scmf.split(separator: " ").last
                {
                    scmfPort = address.split(separator: ":").last.flatMap { Int($0) }
                }
                return
            }
            usleep(50_000)
        }
        process.terminate()
        throw ServeFailure(description: "fieldcap serve did not start: \(stderr)")
    }

    struct ServeFailure: Error, CustomStringConvertible { var description: String }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    struct Reply {
        var status: Int
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    /// One request with curl; `token` nil sends the process's own token (if any), "" sends none.
    func request(
        _ method: String, _ path: String, body: String? = nil, token: String? = nil, to file: String? = nil,
        headers: [String] = []
    )
        throws -> Reply
    {
        let output = file ?? NSTemporaryDirectory() + "/reply-\(UUID().uuidString)"
        defer { if file == nil { try? FileManager.default.removeItem(atPath: output) } }
        var arguments = ["-s", "--path-as-is", "-X", method, "-o", output, "-w", "%{http_code}", base + path]
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        if let sent = token ?? self.token, !sent.isEmpty { arguments += ["-H", "Authorization: Bearer \(sent)"] }
        for header in headers { arguments += ["-H", header] }
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = arguments
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let code = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return Reply(
            status: Int(String(decoding: code, as: UTF8.self)) ?? 0,
            body: FileManager.default.contents(atPath: output) ?? Data())
    }

    /// SIGTERM, then the exit status.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    func sessionNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.removeItem(atPath: stderrPath)
    }
}

/// A client of `serve`'s events WebSocket (Clients/events_client.py: the websockets library, not
/// fieldcap's code), running from its connection until `until` comes or `seconds` pass.
final class EventsWatcher {
    let process = Process()
    private let out = Pipe()
    private var received = Data()

    /// Returns once the client is connected (its first line), so no event after is missed.
    init(_ serve: ServeProcess, seconds: Int, until: String = "stopped") throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let url = serve.base.replacingOccurrences(of: "http://", with: "ws://") + "/api/v1/events"
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Clients/events_client.py").path
        process.arguments = ["python3", script, url, "\(seconds)", "", until]
        process.standardOutput = out
        process.standardError = out
        try process.run()
        while !String(decoding: received, as: UTF8.self).contains("connected") && process.isRunning {
            received += out.fileHandleForReading.availableData
        }
    }

    /// Every line after the connection's, once the client has ended.
    func lines() -> [Substring] {
        received += out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: received, as: UTF8.self).split(separator: "\n").dropFirst().map { $0 }
    }
}

/// What the `fieldcap serve` suites share. They run beside each other, each one test at a time:
/// the API, the previews and the web page, the fleet and hostile clients.
protocol ServeSuite {}

extension ServeSuite {
    static var devices: [String] { ["--cam", "synthetic:160x120@30", "--imu", "synthetic:100"] }

    /// A client or harness the tests run, beside this file (`Clients/...`, `Netns/...`).
    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// The package's root directory.
    static var package: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The token `fieldcap serve` made or read in `file`.
    static func token(in file: String) throws -> String {
        try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func waitUntilIdle(_ serve: ServeProcess) throws {
        for _ in 0..<200 where try serve.request("GET", "/api/v1/status").json["state"] as? String != "idle" {
            usleep(50_000)
        }
    }
}

@Suite("fieldcap serve", .serialized)
struct ServeCommandTests: ServeSuite {
    @Test("a recording started and stopped over HTTP: status, sessions, archive as tar, delete")
    func recordOverHTTP() throws {
        let serve = try ServeProcess(Self.devices)
        let health = try serve.request("GET", "/api/health")
        #expect(health.status == 200)
        #expect(health.json["status"] as? String == "ok")
        #expect((health.json["timestamp"] as? String)?.hasSuffix("Z") == true)
        #expect(health.json["uptime"] is Double)

        let rig = try serve.request("GET", "/api/v1/rig").json
        let devices = rig["devices"] as? [[String: Any]] ?? []
        #expect(devices.map { $0["id"] as? String } == ["cam0", "imu0"])
        #expect((devices.first?["granted"] as? [String: Any])?["width"] as? Int == 160)
        #expect((rig["storage"] as? [String: Any])?["free_bytes"] is Int)

        #expect(try serve.request("POST", "/api/v1/recording/stop").status == 409)
        let started = try serve.request("POST", "/api/v1/recording/start", body: "{\"duration\":\"30s\"}")
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        let twice = try serve.request("POST", "/api/v1/recording/start")
        #expect(twice.status == 409)
        #expect((twice.json["error"] as? String)?.contains("already running") == true)

        usleep(1_500_000)
        let status = try serve.request("GET", "/api/v1/status").json
        #expect(status["state"] as? String == "recording")
        let streams = (status["recording"] as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        #expect(streams.map { $0["id"] as? String } == ["cam0", "imu0"])
        #expect(streams.allSatisfy { ($0["written"] as? Int ?? 0) > 0 && $0["dropped"] as? Int == 0 })

        // Live: neither archived nor deleted.
        #expect(try serve.request("GET", "/api/v1/sessions/\(name)/archive").status == 409)
        #expect(try serve.request("DELETE", "/api/v1/sessions/\(name)").status == 409)

        let stopped = try serve.request("POST", "/api/v1/recording/stop")
        #expect(stopped.status == 200, "\(stopped.text)")
        #expect(stopped.json["reason"] as? String == "stopped over the API")
        let directory = "\(serve.root)/\(name)"
        let validation = try FieldcapProcess.run(["validate", directory])
        #expect(validation.status == 0, "\(validation.stdout)\(validation.stderr)")

        let listed = try serve.request("GET", "/api/v1/sessions").json["sessions"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["name"] as? String } == [name])
        #expect(listed.first?["state"] as? String == "complete")
        let one = try serve.request("GET", "/api/v1/sessions/\(name)").json
        let files = (one["files"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        #expect(files.contains("cam0.mkv") && files.contains("manifest.json"))

        // The archive, unpacked by tar, holds every file byte for byte.
        let tarFile = NSTemporaryDirectory() + "/archive-\(UUID().uuidString).tar"
        let unpacked = NSTemporaryDirectory() + "/unpacked-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: tarFile)
            try? FileManager.default.removeItem(atPath: unpacked)
        }
        #expect(try serve.request("GET", "/api/v1/sessions/\(name)/archive", to: tarFile).status == 200)
        try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
        #expect(try runTool("tar", ["-xf", tarFile, "-C", unpacked]).status == 0)
        let diff = try runTool("diff", ["-r", directory, "\(unpacked)/\(name)"])
        #expect(diff.status == 0, "\(diff.output)")

        let deleted = try serve.request("DELETE", "/api/v1/sessions/\(name)")
        #expect(deleted.status == 200, "\(deleted.text)")
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(try serve.request("GET", "/api/v1/sessions/\(name)").status == 404)
        #expect(serve.terminate() == 0)
    }

    @Test(
        "bad names and bodies are a 4xx with a JSON error, and change nothing",
        arguments: [
            ("GET", "/api/v1/sessions/..", nil as String?, 400),
            ("GET", "/api/v1/sessions/%2E%2E", nil, 400),
            ("DELETE", "/api/v1/sessions/..%2F..%2Fetc", nil, 400),
            ("GET", "/api/v1/sessions/a%2Fb/archive", nil, 400),
            ("DELETE", "/api/v1/sessions/x%01y", nil, 400),
            ("DELETE", "/api/v1/sessions/.extract-1", nil, 400),
            ("GET", "/api/v1/sessions/nosuch", nil, 404),
            ("GET", "/api/v1/nosuch", nil, 404),
            ("POST", "/api/v1/recording/start", "[1]", 400),
            ("POST", "/api/v1/recording/start", "{\"duration\":-1}", 400),
            ("POST", "/api/v1/recording/start", "{\"duration\":\"soon\"}", 400),
            ("POST", "/api/v1/recording/start", "{\"durration\":\"1s\"}", 400),
            ("POST", "/api/v1/recording/start", "{\"max_storage\":\"1G\"}", 400),
            ("POST", "/api/v1/recording/start", "{\"segment\":\"1ms\"}", 400),
            ("GET", "/api/v1/extract?from=yesterday&to=today", nil, 400),
            ("GET", "/api/v1/extract?from=2020-01-01T00:00:00Z&to=2020-01-01T00:00:01Z", nil, 404),
            ("GET", "/api/v1/preview/imu0.jpg", nil, 404),
            ("GET", "/api/v1/preview/nosuch.mjpg", nil, 404),
            ("GET", "/api/v1/preview/cam0.png", nil, 404),
        ])
    func refusals(method: String, path: String, body: String?, expected: Int) throws {
        let serve = try ServeProcess(Self.devices)
        // Something to protect: a file beside the root, and the root's contents.
        let outside = (serve.root as NSString).deletingLastPathComponent + "/outside-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: outside, contents: Data("keep".utf8))
        defer { try? FileManager.default.removeItem(atPath: outside) }
        let before = serve.sessionNames()
        let reply = try serve.request(method, path, body: body)
        #expect(reply.status == expected, "\(reply.text)")
        #expect(reply.json["error"] is String, "\(reply.text)")
        #expect(serve.sessionNames() == before)
        #expect(FileManager.default.fileExists(atPath: outside))
        #expect(try serve.request("GET", "/api/v1/status").json["state"] as? String == "idle")
        #expect(serve.terminate() == 0)
    }

    @Test("beyond loopback a token is made (0600) and needed: without it 401 and nothing starts")
    func token() throws {
        let tokenFile = NSTemporaryDirectory() + "/token-\(UUID().uuidString)/token"
        defer { try? FileManager.default.removeItem(atPath: (tokenFile as NSString).deletingLastPathComponent) }
        let serve = try ServeProcess(Self.devices + ["--token-file", tokenFile], listen: "0.0.0.0:0")
        serve.base = serve.base.replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // The SCMF listener stayed on loopback: it has no token to ask for.
        #expect(serve.stderr.contains("SCMF v1 preview of cam0 on tcp://127.0.0.1:"), "\(serve.stderr)")
        #expect(serve.stderr.contains("made a new API token in \(tokenFile)"))
        let token = try Self.token(in: tokenFile)
        #expect(token.count == 64)

        #expect(try serve.request("GET", "/api/health", token: "").status == 200)
        for (method, path) in [
            ("GET", "/api/v1/rig"), ("GET", "/api/v1/status"), ("POST", "/api/v1/recording/start"),
            ("GET", "/api/v1/sessions"), ("DELETE", "/api/v1/sessions/anything"), ("GET", "/api/v1/events"),
            ("GET", "/api/v1/preview/cam0.jpg"), ("GET", "/api/v1/preview/cam0.mjpg"),
        ] {
            for wrong in ["", "not-the-token", String(token.dropLast()) + "0"] where wrong != token {
                let reply = try serve.request(method, path, token: wrong)
                #expect(reply.status == 401, "\(method) \(path) with '\(wrong)': \(reply.text)")
            }
        }
        #expect(serve.sessionNames().isEmpty)
        // The page is open (it holds no data); a GET may carry the token as the page's cookie or
        // as ?token=, what changes something needs the header: a cookie alone starts nothing.
        let page = try serve.request("GET", "/", token: "")
        #expect(page.status == 200 && page.text.contains("<title>fieldcap</title>"))
        let cookie = "Cookie: theme=dark; fieldcap_token=\(token)"
        #expect(try serve.request("GET", "/api/v1/rig", token: "", headers: [cookie]).status == 200)
        #expect(try serve.request("GET", "/api/v1/rig?token=\(token)", token: "").status == 200)
        #expect(try serve.request("GET", "/api/v1/rig?token=x\(token.dropFirst())", token: "").status == 401)
        #expect(try serve.request("POST", "/api/v1/recording/start", token: "", headers: [cookie]).status == 401)
        #expect(try serve.request("POST", "/api/v1/recording/start?token=\(token)", token: "").status == 401)
        #expect(serve.sessionNames().isEmpty)
        // The scheme is case-insensitive (RFC 9110 11.1); a WebSocket without the token is a 401
        // too, not a failed upgrade.
        for scheme in ["bearer", "BEARER", "Bearer  "] {
            let reply = try serve.request(
                "GET", "/api/v1/rig", token: "", headers: ["Authorization: \(scheme) \(token)"])
            #expect(reply.status == 200, "'\(scheme)': \(reply.text)")
        }
        #expect(
            try serve.request("GET", "/api/v1/rig", token: "", headers: ["Authorization: Bearertoken\(token)"]).status
                == 401)
        let socket = try serve.request(
            "GET", "/api/v1/events", token: "",
            headers: [
                "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            ])
        // Not upgraded, and told why: the refusal every other request gets (hummingbird-websocket
        // alone would answer an empty 400).
        #expect(socket.status == 401, "\(socket.status) \(socket.text)")
        #expect((socket.json["error"] as? String)?.contains("needs its token") == true, "\(socket.text)")
        // With the token, the same request is upgraded: a WebSocket client reads the status.
        let watched = try runTool(
            "env",
            [
                "python3", Self.script("Clients/events_client.py"),
                serve.base.replacingOccurrences(of: "http://", with: "ws://") + "/api/v1/events", "1.5", token,
            ])
        #expect(watched.status == 0 && watched.output.contains("\"event\":\"status\""), "\(watched.output)")
        serve.token = token
        #expect(try serve.request("GET", "/api/v1/rig").status == 200)
        #expect(serve.terminate() == 0)

        // The second start reads the same token.
        let again = try ServeProcess(Self.devices + ["--token-file", tokenFile], listen: "0.0.0.0:0")
        again.base = again.base.replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        #expect(!again.stderr.contains("made a new API token"))
        #expect(try again.request("GET", "/api/v1/status", token: token).status == 200)
        #expect(again.terminate() == 0)
    }

    @Test("SIGTERM while recording finishes the session, which validates; extract sends a range as a tar")
    func sigtermFinishes() throws {
        let serve = try ServeProcess(Self.devices)
        let started = try serve.request("POST", "/api/v1/recording/start", body: "{\"segment\":2}")
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        usleep(5_000_000)
        let now = Date()
        func utc(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            return formatter.string(from: date)
        }
        let tarFile = NSTemporaryDirectory() + "/extract-\(UUID().uuidString).tar"
        let unpacked = NSTemporaryDirectory() + "/extract-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: tarFile)
            try? FileManager.default.removeItem(atPath: unpacked)
        }
        let extract = try serve.request(
            "GET", "/api/v1/extract?from=\(utc(now.addingTimeInterval(-4)))&to=\(utc(now.addingTimeInterval(-2)))",
            to: tarFile)
        #expect(extract.status == 200, "\(extract.text)")
        try FileManager.default.createDirectory(atPath: unpacked, withIntermediateDirectories: true)
        #expect(try runTool("tar", ["-xf", tarFile, "-C", unpacked]).status == 0)
        let validation = try FieldcapProcess.run(["validate", "\(unpacked)/\(name)-extract"])
        #expect(validation.status == 0, "\(validation.stdout)\(validation.stderr)")
        // The scratch directory is gone once the tar is sent.
        #expect(serve.sessionNames() == [name])

        #expect(serve.terminate() == 0, "\(serve.stderr)")
        let index = try String(contentsOfFile: "\(serve.root)/\(name)/recording.json", encoding: .utf8)
        #expect(index.contains("service shutdown"))
        let recovered = try FieldcapProcess.run(["sessions", serve.root])
        #expect(recovered.stdout.contains("complete"), "\(recovered.stdout)")
    }

    @Test(
        """
        the events WebSocket, read by the websockets library: status each second, started, segment rotated, \
        stopped; segments past --keep deleted and said so
        """)
    func events() throws {
        let serve = try ServeProcess(Self.devices)
        let watcher = try EventsWatcher(serve, seconds: 30)
        let started = try serve.request(
            "POST", "/api/v1/recording/start", body: "{\"duration\":3.5,\"segment\":\"1s\",\"keep\":\"1s\"}")
        #expect(started.status == 201, "\(started.text)")
        let lines = watcher.lines()
        // The recording's own notices reach serve's output, as record's reach its terminal.
        #expect(serve.stderr.contains("deleted segment "), "\(serve.stderr)")
        let events = lines.compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(events.count == lines.count, "every message is one JSON object: \(lines)")
        let kinds = events.compactMap { $0["event"] as? String }
        #expect(kinds.first == "status")
        #expect(kinds.contains("started"))
        #expect(kinds.filter { $0 == "segment_rotated" }.count >= 2, "\(kinds)")
        #expect(kinds.last == "stopped", "\(kinds)")
        let recordingStatuses = events.filter {
            $0["event"] as? String == "status" && $0["state"] as? String == "recording"
        }
        #expect(recordingStatuses.count >= 2, "\(kinds)")
        let stopped = events.last ?? [:]
        #expect(stopped["reason"] as? String == "duration")
        #expect(stopped["name"] as? String == started.json["name"] as? String)
        #expect(serve.terminate() == 0)
    }

    /// The parts of a `multipart/x-mixed-replace` body: each one's headers and bytes.
    @Test(
        """
        every endpoint's real responses, idle and recording, with \
        and without the token, match openapi.yaml (openapi-core)
        """
    )
    func openAPI() throws {
        let tokenFile = NSTemporaryDirectory() + "/token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let serve = try ServeProcess(Self.devices + ["--token-file", tokenFile])
        let token = try Self.token(in: tokenFile)
        let spec = Self.package.appendingPathComponent("Sources/7-Frontends/FieldcapService/Web/openapi.yaml").path
        let check = try runTool(
            "env",
            [
                "python3", Self.script("Clients/openapi_check.py"), serve.base, spec, "--token",
                token,
            ])
        #expect(check.status == 0, "\(check.output)")
        let result = try JSONSerialization.jsonObject(with: Data(check.output.utf8)) as? [String: Any]
        #expect(result?["same_document"] as? Bool == true, "the rig serves the repository's openapi.yaml")
        let checks = result?["checks"] as? [[String: Any]] ?? []
        #expect(checks.count >= 30)
        #expect((result?["failed"] as? [Any])?.isEmpty == true, "\(result?["failed"] ?? "")")
        // The recording started with check_sync was checked once it stopped: 1.5 s of a still rig,
        // refused, which the session shows.
        let syncCheck = result?["sync_check"] as? [String: Any]
        let pair = (syncCheck?["pairs"] as? [[String: Any]])?.first
        #expect((pair?["image_alignment"] as? [String: Any])?["refused"] as? String != nil, "\(syncCheck ?? [:])")
        // Every path of the document was exercised (the events' WebSocket by its own test).
        let document = try String(contentsOfFile: spec, encoding: .utf8)
        let paths = document.split(separator: "\n").filter { $0.hasPrefix("  /") }.map {
            String($0.dropFirst(2).dropLast())
        }
        let called = Set(checks.compactMap { ($0["path"] as? String)?.split(separator: "?").first.map(String.init) })
        for path in paths where path != "/api/v1/events" && path != "/api/v1/openapi.yaml" {
            let pattern = path.replacingOccurrences(of: "{name}", with: "[^/]+")
                .replacingOccurrences(of: "{camera}", with: "[^/.]+").replacingOccurrences(
                    of: "{stream}", with: "[^/]+")
            #expect(
                called.contains { $0.range(of: "^\(pattern)$", options: .regularExpression) != nil },
                "\(path) was not checked")
        }
        #expect(serve.terminate() == 0)
    }
}
