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

@Suite("fieldcap serve", .serialized)
struct ServeCommandTests {
    static let devices = ["--cam", "synthetic:160x120@30", "--imu", "synthetic:100"]

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
        // Not upgraded: hummingbird-websocket answers every refused upgrade with an empty 400
        // (its failed-upgrade path), whatever the router said; a 401 would need a change there.
        #expect(socket.status == 400, "\(socket.status) \(socket.text)")
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

    @Test("the events WebSocket, read by the websockets library: status each second, started, segment rotated, stopped")
    func events() throws {
        let serve = try ServeProcess(Self.devices)
        let script = Self.script("Clients/events_client.py")
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        client.arguments = [
            "python3", script, serve.base.replacingOccurrences(of: "http://", with: "ws://") + "/api/v1/events", "30",
        ]
        let out = Pipe()
        client.standardOutput = out
        client.standardError = out
        try client.run()
        // Until the client is connected (its first line), so no event is missed.
        var received = Data()
        while !String(decoding: received, as: UTF8.self).contains("connected") && client.isRunning {
            received += out.fileHandleForReading.availableData
        }
        let started = try serve.request(
            "POST", "/api/v1/recording/start", body: "{\"duration\":3.5,\"segment\":\"1s\"}")
        #expect(started.status == 201, "\(started.text)")
        received += out.fileHandleForReading.readDataToEndOfFile()
        client.waitUntilExit()
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n").dropFirst()
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
    static func parts(_ body: Data) -> [(headers: [String: String], bytes: Data)] {
        let bytes = [UInt8](body)
        let delimiter = Array("--fieldcapframe\r\n".utf8)
        var parts: [(headers: [String: String], bytes: Data)] = []
        var at = 0
        while at + delimiter.count <= bytes.count, Array(bytes[at..<(at + delimiter.count)]) == delimiter {
            at += delimiter.count
            var headers: [String: String] = [:]
            while let end = (at..<max(at, bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 }) {
                let line = String(decoding: bytes[at..<end], as: UTF8.self)
                at = end + 2
                if line.isEmpty { break }
                let field = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if field.count == 2 { headers[field[0].lowercased()] = field[1] }
            }
            guard let length = headers["content-length"].flatMap({ Int($0) }), at + length + 2 <= bytes.count else {
                break  // the last part, cut by the client's time limit
            }
            parts.append((headers, Data(bytes[at..<(at + length)])))
            at += length + 2
        }
        return parts
    }

    /// Width and height of a JPEG, as ffprobe reads them.
    static func probeJPEG(_ jpeg: Data) throws -> String {
        let path = NSTemporaryDirectory() + "/frame-\(UUID().uuidString).jpg"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try jpeg.write(to: URL(fileURLWithPath: path))
        let probe = try runTool(
            "ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", path])
        return probe.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Reads cam0's MJPEG preview with curl into `body` for `seconds`, starting a 2 s recording
    /// `startingAfter` seconds in; returns the recording's name once the service is idle again.
    func recordWhileWatching(
        _ serve: ServeProcess, seconds: Int, startingAfter delay: UInt32, to body: String, curlOptions: [String] = []
    ) throws -> String {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments =
            ["-s", "--max-time", "\(seconds)"] + curlOptions + ["-o", body, serve.base + "/api/v1/preview/cam0.mjpg"]
        try curl.run()
        usleep(delay * 1_000_000)
        let started = try serve.request("POST", "/api/v1/recording/start", body: "{\"duration\":\"2s\"}")
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        curl.waitUntilExit()
        try waitUntilIdle(serve)
        return name
    }

    @Test("previews: a JPEG and MJPEG (curl, ffprobe) while idle and on through a recording, which loses nothing")
    func previewOverHTTP() throws {
        let serve = try ServeProcess(Self.devices)
        let rig = try serve.request("GET", "/api/v1/rig").json
        let devices = rig["devices"] as? [[String: Any]] ?? []
        let preview = devices.first?["preview"] as? [String: Any]
        #expect(preview?["mjpg"] as? String == "/api/v1/preview/cam0.mjpg")
        #expect(devices.last?["preview"] == nil, "an IMU has no preview")

        // Idle: the camera is opened for the preview.
        let snapshot = NSTemporaryDirectory() + "/snapshot-\(UUID().uuidString).jpg"
        defer { try? FileManager.default.removeItem(atPath: snapshot) }
        let jpg = try serve.request("GET", "/api/v1/preview/cam0.jpg", to: snapshot)
        #expect(jpg.status == 200)
        #expect(try Self.probeJPEG(Data(contentsOf: URL(fileURLWithPath: snapshot))) == "160,120")

        // MJPEG for 6 s; a 2 s recording starts 2 s in.
        let body = NSTemporaryDirectory() + "/preview-\(UUID().uuidString).mjpg"
        let headers = body + ".headers"
        defer {
            try? FileManager.default.removeItem(atPath: body)
            try? FileManager.default.removeItem(atPath: headers)
        }
        let name = try recordWhileWatching(
            serve, seconds: 6, startingAfter: 2, to: body, curlOptions: ["-D", headers])

        let head = try String(contentsOfFile: headers, encoding: .utf8)
        #expect(head.contains("multipart/x-mixed-replace; boundary=fieldcapframe"), "\(head)")
        let parts = Self.parts(try Data(contentsOf: URL(fileURLWithPath: body)))
        #expect(parts.count >= 4, "\(parts.count) parts")
        #expect(parts.allSatisfy { $0.headers["content-type"] == "image/jpeg" })
        #expect(try Self.probeJPEG(try #require(parts.last?.bytes)) == "160,120")
        // The preview went on through the hand-over: frames from before the recording's start
        // (its sync point) and from during it.
        let times = parts.compactMap { $0.headers["x-capture-ns"].flatMap { UInt64($0) } }
        #expect(times == times.sorted() && Set(times).count == times.count)
        let syncPoint =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(serve.root)/\(name)/sync_point.json"))) as? [String: Any]
        let startNs = try #require((syncPoint?["monotonic_ns"] as? NSNumber)?.uint64Value)
        #expect(times.contains { $0 < startNs } && times.contains { $0 > startNs }, "\(times) around \(startNs)")

        let stopped = (try serve.request("GET", "/api/v1/status").json["last"] as? [String: Any]) ?? [:]
        let streams = stopped["streams"] as? [[String: Any]] ?? []
        #expect(streams.count == 2 && streams.allSatisfy { $0["dropped"] as? Int == 0 }, "\(stopped)")
        let validation = try FieldcapProcess.run(["validate", "\(serve.root)/\(name)"])
        #expect(validation.status == 0, "\(validation.stdout)\(validation.stderr)")
        #expect(serve.terminate() == 0)
    }

    @Test(
        "a camera recorded with encode=jpeg is previewed with the recording's own JPEGs: each preview frame during the recording is byte for byte a frame of the file"
    )
    func previewSharesTheRecordersJPEG() throws {
        let serve = try ServeProcess(["--cam", "synthetic:160x120@30,encode=jpeg", "--imu", "synthetic:100"])
        let body = NSTemporaryDirectory() + "/shared-\(UUID().uuidString).mjpg"
        let frames = NSTemporaryDirectory() + "/shared-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: frames, withIntermediateDirectories: true)
        defer {
            try? FileManager.default.removeItem(atPath: body)
            try? FileManager.default.removeItem(atPath: frames)
        }
        // MJPEG for 5 s; a 2 s recording starts 1 s in.
        let name = try recordWhileWatching(serve, seconds: 5, startingAfter: 1, to: body)
        let session = "\(serve.root)/\(name)"
        // The file's JPEGs as FFmpeg demuxes them, by capture time.
        let split = try runTool(
            "ffmpeg", ["-v", "error", "-i", "\(session)/cam0.mkv", "-c", "copy", "-f", "image2", "\(frames)/%06d.jpg"])
        try #require(split.status == 0, "\(split.output)")
        let stamps = try String(contentsOfFile: "\(session)/cam0.timestamps.jsonl", encoding: .utf8)
            .split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["capture_ns"] as? NSNumber
            }.map(\.uint64Value)
        var recorded: [UInt64: Data] = [:]
        for (index, captureNs) in stamps.enumerated() {
            recorded[captureNs] = FileManager.default.contents(atPath: String(format: "\(frames)/%06d.jpg", index + 1))
        }
        try #require(recorded.count == stamps.count && !stamps.isEmpty)
        let parts = Self.parts(try Data(contentsOf: URL(fileURLWithPath: body)))
        let during = parts.compactMap { part -> (UInt64, Data)? in
            guard let time = part.headers["x-capture-ns"].flatMap({ UInt64($0) }), recorded[time] != nil else {
                return nil
            }
            return (time, part.bytes)
        }
        // About 10 preview frames a second for 2 s: each the recording's own JPEG of that frame.
        #expect(during.count >= 5, "\(during.count) of \(parts.count) preview frames were captured while recording")
        for (time, jpeg) in during {
            #expect(jpeg == recorded[time], "the preview of the frame at \(time) is not the file's")
        }
        // Before the recording, the preview encodes frames itself (quality 80): none is in the file.
        let before = parts.filter { part in
            part.headers["x-capture-ns"].flatMap { UInt64($0) }.map { $0 < stamps[0] } ?? false
        }
        #expect(!before.isEmpty && before.allSatisfy { part in !recorded.values.contains(part.bytes) })
        #expect(serve.terminate() == 0)
    }

    @Test("SCMF v1: a client written from the seed connects, leaves and comes back, and decodes every JPEG")
    func scmf() throws {
        let serve = try ServeProcess(Self.devices)
        let port = try #require(serve.scmfPort, "\(serve.stderr)")
        let script = Self.script("Clients/scmf_client.py")
        let client = try runTool(
            "env", ["python3", script, "--port", String(port), "--frames", "4", "--connections", "3"])
        #expect(client.status == 0, "\(client.output)")
        let result = try JSONSerialization.jsonObject(with: Data(client.output.utf8)) as? [String: Any]
        let connections = result?["connections"] as? [[String: Any]] ?? []
        #expect(connections.count == 3)
        for connection in connections {
            #expect(connection["frames"] as? Int == 4, "\(connection)")
            #expect(connection["decoded"] as? Int == 4, "\(connection)")
            #expect((connection["errors"] as? [Any])?.isEmpty == true, "\(connection)")
            let sizes = connection["sizes"] as? [[Int]] ?? []
            #expect(sizes.allSatisfy { $0 == [160, 120] })
            let times = connection["timestamps"] as? [Double] ?? []
            #expect(times == times.sorted() && Set(times).count == times.count)
        }
        #expect(serve.terminate() == 0)
    }

    @Test("the web page in headless Chromium: token from the link, live preview that moves, start, stop, delete")
    func webPage() throws {
        let tokenFile = NSTemporaryDirectory() + "/token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let serve = try ServeProcess(
            ["--cam", "synthetic:320x240@30", "--imu", "synthetic:100", "--token-file", tokenFile])
        let token = try Self.token(in: tokenFile)
        // The screenshot is kept: .build/test-artefacts/serve-web-page.png.
        let artefacts = Self.package.appendingPathComponent(".build/test-artefacts").path
        try FileManager.default.createDirectory(atPath: artefacts, withIntermediateDirectories: true)
        let screenshot = artefacts + "/serve-web-page.png"
        try? FileManager.default.removeItem(atPath: screenshot)
        let script = Self.script("Clients/web_page_client.py")
        let browser = try runTool("env", ["python3", script, serve.base, screenshot, "--token", token])
        #expect(browser.status == 0, "\(browser.output)")
        let seen = try #require(
            try JSONSerialization.jsonObject(with: Data(browser.output.utf8)) as? [String: Any], "\(browser.output)")
        #expect(seen["error"] == nil, "\(seen)")
        #expect(
            seen["steps"] as? [String] == ["idle", "preview", "recording", "screenshot", "stopped", "deleted"],
            "\(seen)")
        #expect(seen["token_form_shown"] as? Bool == false, "\(seen)")
        #expect(seen["preview_size"] as? [Int] == [320, 240], "\(seen)")
        #expect(seen["preview_changed"] as? Bool == true, "\(seen)")
        #expect((seen["stop_message"] as? String)?.hasSuffix(", 0 dropped") == true, "\(seen)")
        #expect((seen["session_state"] as? String)?.hasPrefix("complete") == true, "\(seen)")
        let names = seen["sessions"] as? [String] ?? []
        #expect(names.count == 1, "\(seen)")
        // Deleted through the page: gone from the disk.
        #expect(serve.sessionNames().isEmpty)
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
        #expect(serve.terminate() == 0)
    }

    @Test("DNS-SD: found by avahi-browse through a real avahi-daemon in a network namespace, with its TXT records")
    func discovery() throws {
        let work = NSTemporaryDirectory() + "/discovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let script = Self.script("Netns/discovery.sh")
        let run = try runTool(
            "unshare",
            ["--net", "--mount", "--pid", "--fork", "--mount-proc", script, FieldcapProcess.executable.path, work])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("the rig is not announced on the network"), "\(run.output)")
        #expect(run.output.contains("announced as 'fieldcap rig07' (_fieldcap._tcp)"), "\(run.output)")
        #expect(run.output.contains("discovery: every step as expected"), "\(run.output)")
    }

    @Test(
        "a fleet of three rigs in network namespaces over a real mosquitto: start at one instant, a rig killed, the broker restarted, stop"
    )
    func fleet() throws {
        let work = NSTemporaryDirectory() + "/fleet-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let run = try runTool(
            "unshare",
            [
                "--net", "--mount", "--pid", "--fork", "--mount-proc", Self.script("Netns/fleet.sh"),
                FieldcapProcess.executable.path, work,
            ])
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("fleet: every step as expected"), "\(run.output)")
        // The scheduling bound, measured: each rig's sync point against the shared instant.
        for line in run.output.split(separator: "\n") where line.hasPrefix("sync point of ") { print(line) }
    }

    @Test(
        "a fleet's start on a real mosquitto: a retained one ignored, one beyond the horizon refused, a scheduled one called off by `fleet stop` and by the API, nothing left on disk"
    )
    func fleetScheduledStarts() throws {
        let broker = try MosquittoBroker()
        let command = "fieldcap/fleet/t/command"
        func publish(_ json: String, retain: Bool = false) throws {
            let sent = try runTool(
                "mosquitto_pub",
                ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", command, "-m", json]
                    + (retain ? ["-r"] : []), package: "mosquitto")
            #expect(sent.status == 0, "\(sent.output)")
        }
        func nowNs() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1e9) }
        // Sent retained before the rig joins: mosquitto hands it over as the rig subscribes, with
        // the retain flag set (MQTT 3.1.1, 3.3.1.3); a restarted rig would start from it.
        try publish(#"{"command":"start","capture_id":"stale"}"#, retain: true)
        let serve = try ServeProcess(
            Self.devices + ["--mqtt", broker.url, "--fleet", "t", "--fleet-horizon", "60s", "--wall-clock", "none"])
        func waitFor(_ text: String) -> Bool {
            for _ in 0..<200 where !serve.stderr.contains(text) { usleep(50_000) }
            return serve.stderr.contains(text)
        }
        func waitForState(_ state: String) throws -> [String: Any] {
            for _ in 0..<200 {
                let status = try serve.request("GET", "/api/v1/status").json
                if status["state"] as? String == state { return status }
                usleep(50_000)
            }
            return try serve.request("GET", "/api/v1/status").json
        }
        #expect(waitFor("fleet: ignored a retained command"), "\(serve.stderr)")
        #expect(try waitForState("idle")["state"] as? String == "idle")

        // Beyond the horizon (a day, 2^63 - 1, 2^64 - 1 ns, `fleet start --in 2h`): refused with why.
        for (id, at) in [
            ("day", "\(nowNs() + 86_400_000_000_000)"), ("int", "9223372036854775807"),
            ("uint", "18446744073709551615"),
        ] {
            try publish(#"{"command":"start","capture_id":"\#(id)","at_wall_clock_ns":\#(at)}"#)
            #expect(waitFor("fleet: capture \(id) refused: the start instant is"), "\(serve.stderr)")
        }
        let twoHours = try runTool(
            "env",
            [FieldcapProcess.executable.path, "fleet", "start", "--in", "2h", "--mqtt", broker.url, "--fleet", "t"])
        #expect(twoHours.status != 0)
        #expect(twoHours.output.contains("beyond this rig's horizon of 60.0 s"), "\(twoHours.output)")
        #expect(try waitForState("idle")["state"] as? String == "idle")

        // Scheduled 30 s ahead: the status says so, a start is refused naming it, and both
        // `fleet stop` (which finds the capture in the rig's status) and the API's stop call it off.
        for stopper in ["fleet stop", "POST /api/v1/recording/stop"] {
            try publish(#"{"command":"start","capture_id":"soon","at_wall_clock_ns":\#(nowNs() + 30_000_000_000)}"#)
            let scheduled = try waitForState("scheduled")
            #expect((scheduled["scheduled"] as? [String: Any])?["capture_id"] as? String == "soon", "\(scheduled)")
            let second = try serve.request("POST", "/api/v1/recording/start")
            #expect(second.status == 409 && second.text.contains("a start is scheduled for"), "\(second.text)")
            if stopper == "fleet stop" {
                var stopped = (status: Int32(-1), output: "")
                // The rig's retained status names the capture within its 2 s refresh; until then
                // `fleet stop` finds no capture to stop (64) and sends nothing.
                for _ in 0..<20 where stopped.status == -1 || stopped.status == 64 {
                    stopped = try runTool(
                        "env",
                        [FieldcapProcess.executable.path, "fleet", "stop", "--mqtt", broker.url, "--fleet", "t"])
                    if stopped.status == 64 { usleep(250_000) }
                }
                #expect(stopped.status == 0, "\(stopped.output)")
                #expect(stopped.output.contains("called off"), "\(stopped.output)")
            } else {
                let stopped = try serve.request("POST", "/api/v1/recording/stop")
                #expect(stopped.status == 200, "\(stopped.text)")
                #expect((stopped.json["reason"] as? String ?? "").contains("called off"), "\(stopped.text)")
            }
            #expect(try waitForState("idle")["state"] as? String == "idle", "\(stopper)")
            #expect(serve.sessionNames().isEmpty, "\(stopper) left \(serve.sessionNames())")
        }

        // A start a second ahead still starts, and stops.
        try publish(#"{"command":"start","capture_id":"now","at_wall_clock_ns":\#(nowNs() + 1_000_000_000)}"#)
        #expect(try waitForState("recording")["state"] as? String == "recording", "\(serve.stderr)")
        #expect(try serve.request("POST", "/api/v1/recording/stop").status == 200)
        #expect(serve.sessionNames().count == 1)
        #expect(!serve.stderr.contains("capture stale"), "the retained start was acted on: \(serve.stderr)")
        #expect(serve.terminate() == 0)
    }

    @Test(
        "damaged sessions and hostile requests get one JSON error and leave serve up: capture_ns 2^63 - 1, a missing video, racing deletes, a huge body, bad offsets"
    )
    func damagedSessionsAndHostileRequests() throws {
        let fm = FileManager.default
        let serve = try ServeProcess(Self.devices + ["--wall-clock", "none"])
        let started = try serve.request("POST", "/api/v1/recording/start", body: #"{"duration":"1s"}"#)
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        usleep(1_200_000)
        try waitUntilIdle(serve)
        let session = "\(serve.root)/\(name)"
        let listed = try serve.request("GET", "/api/v1/sessions/\(name)").json
        let from = try #require(listed["start_utc"] as? String)
        // The IMU's last line at 2^63 - 1 ns (which validate passes): its wall clock is in 2318.
        let files = try fm.contentsOfDirectory(atPath: session)
        let imu = try #require(
            files.first { $0.hasSuffix(".jsonl") && !$0.hasSuffix(".timestamps.jsonl") }.map { String($0.dropLast(6)) })
        for file in ["\(imu).timestamps.jsonl", "\(imu).jsonl"] {
            let text = try String(contentsOfFile: "\(session)/\(file)", encoding: .utf8)
            let last = try #require(text.split(separator: "\n").last)
            let rest = try #require(last.firstIndex(of: ","))
            try (text + #"{"capture_ns":9223372036854775807"# + last[rest...] + "\n").write(
                toFile: "\(session)/\(file)", atomically: true, encoding: .utf8)
        }
        let far = try serve.request("GET", "/api/v1/extract?from=\(from)&to=2400-01-01T00:00:00Z&session=\(name)")
        #expect(far.status == 200 || far.status == 422, "\(far.status) \(far.text)")
        #expect(try serve.request("GET", "/api/health").status == 200, "serve died: \(serve.stderr)")
        for (query, why) in [
            ("from=\(from)&to=9999-12-31T23:59:59Z", "past 2554"),
            ("from=\(from)&to=2026-11-24T10:05:00+99:99", "+99:99"),
        ] {
            let reply = try serve.request("GET", "/api/v1/extract?\(query)")
            #expect(reply.status == 400 && reply.json["error"] is String, "\(why): \(reply.status) \(reply.text)")
        }

        // Its video gone: a JSON error, not an empty 500.
        let video = try #require(files.first { $0.hasSuffix(".mkv") })
        try fm.removeItem(atPath: "\(session)/\(video)")
        let missing = try serve.request("GET", "/api/v1/extract?from=\(from)&to=2400-01-01T00:00:00Z&session=\(name)")
        #expect(missing.status == 422, "\(missing.status) \(missing.text)")
        #expect(missing.json["error"] is String, "\(missing.text)")
        #expect(try fm.contentsOfDirectory(atPath: serve.root).filter { $0.hasPrefix(".extract-") }.isEmpty)

        // A body past the start request's 64 KiB: 413 with its JSON.
        let huge = try serve.request("POST", "/api/v1/recording/start", body: String(repeating: " ", count: 100_000))
        #expect(huge.status == 413 && huge.json["error"] is String, "\(huge.status) '\(huge.text)'")

        // Eight DELETEs of it at once: one deletes it, the others get a 404 or 409 that names
        // no path of the rig.
        let replies = Mutex<[ServeProcess.Reply]>([])
        // Each request is its own curl process; the ServeProcess is only read.
        nonisolated(unsafe) let shared = serve
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let reply = try? shared.request("DELETE", "/api/v1/sessions/\(name)") {
                replies.withLock { $0.append(reply) }
            }
        }
        let all = replies.withLock { $0 }
        #expect(all.count == 8)
        #expect(all.filter { $0.status == 200 }.count == 1, "\(all.map(\.status))")
        for reply in all where reply.status != 200 {
            #expect(reply.status == 404 || reply.status == 409, "\(reply.status) \(reply.text)")
            #expect(reply.json["error"] is String && !reply.text.contains(serve.root), "\(reply.text)")
        }
        #expect(!fm.fileExists(atPath: session))
        #expect(serve.terminate() == 0)
    }

    @Test(
        "without a token: another site's page (Origin) and DNS rebinding (Host) get 403 and start nothing; the rig's own page and curl pass"
    )
    func originAndHost() throws {
        let serve = try ServeProcess(Self.devices + ["--wall-clock", "none"])
        let port = try #require(serve.base.split(separator: ":").last.map(String.init))
        // A form's POST from another site: a CORS "simple request" the browser sends unasked.
        for headers in [
            ["Origin: http://evil.example", "Content-Type: text/plain"], ["Origin: null"],
            ["Origin: http://127.0.0.1:\(port).evil.example"], ["Host: evil.example:\(port)"],
            ["Host: 127.0.0.1.evil.example"], ["Origin: http://localhost:1", "Host: localhost:\(port)"],
        ] {
            let start = try serve.request("POST", "/api/v1/recording/start", headers: headers)
            #expect(start.status == 403, "\(headers): \(start.status) \(start.text)")
            #expect(start.json["error"] is String, "\(start.text)")
        }
        let rebound = try serve.request("GET", "/api/v1/sessions", headers: ["Host: attacker.example"])
        #expect(rebound.status == 403, "\(rebound.text)")
        let socket = try serve.request(
            "GET", "/api/v1/events",
            headers: [
                "Origin: http://evil.example", "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            ])
        // Refused, not upgraded (101): hummingbird-websocket's failed upgrade is an empty 400.
        #expect(socket.status == 400, "a cross-site WebSocket: \(socket.status) \(socket.text)")
        #expect(try serve.request("GET", "/api/v1/status").json["state"] as? String == "idle")
        #expect(serve.sessionNames().isEmpty)

        // The rig's names, any loopback address, and the page's own origin.
        for host in ["localhost:\(port)", "127.0.0.1:\(port)", "127.0.0.2:\(port)", "[::1]:\(port)", "LOCALHOST"] {
            let status = try serve.request("GET", "/api/v1/status", headers: ["Host: \(host)"])
            #expect(status.status == 200, "\(host): \(status.text)")
        }
        let own = ["Origin: http://127.0.0.1:\(port)"]
        #expect(try serve.request("POST", "/api/v1/recording/start", headers: own).status == 201)
        #expect(try serve.request("POST", "/api/v1/recording/stop", headers: own).status == 200)
        #expect(serve.terminate() == 0)
    }

    @Test(
        "symbolic links: one in the root is not listed, served or deleted; one inside a session makes its archive a 409"
    )
    func symbolicLinksOverHTTP() throws {
        let fm = FileManager.default
        let serve = try ServeProcess(Self.devices + ["--wall-clock", "none"])
        let started = try serve.request("POST", "/api/v1/recording/start", body: #"{"duration":"1s"}"#)
        #expect(started.status == 201, "\(started.text)")
        let name = try #require(started.json["name"] as? String)
        usleep(1_200_000)
        try waitUntilIdle(serve)
        let outside = NSTemporaryDirectory() + "/outside-\(UUID().uuidString)"
        defer { try? fm.removeItem(atPath: outside) }
        try fm.copyItem(atPath: "\(serve.root)/\(name)", toPath: outside)
        try fm.createSymbolicLink(atPath: "\(serve.root)/elsewhere", withDestinationPath: outside)

        let listed = try serve.request("GET", "/api/v1/sessions").json["sessions"] as? [[String: Any]] ?? []
        #expect(listed.compactMap { $0["name"] as? String } == [name])
        for (method, path) in [
            ("GET", "/api/v1/sessions/elsewhere"), ("GET", "/api/v1/sessions/elsewhere/archive"),
            ("DELETE", "/api/v1/sessions/elsewhere"),
        ] {
            let reply = try serve.request(method, path)
            #expect(reply.status == 404, "\(method) \(path): \(reply.status) \(reply.text)")
            #expect(!reply.text.contains(outside), "\(reply.text)")
        }
        #expect(fm.fileExists(atPath: "\(outside)/fieldcap.json"))

        // A session whose video is a link: its archive is refused, naming it (it was sent
        // without the video, 200).
        let video = try #require(
            try fm.contentsOfDirectory(atPath: "\(serve.root)/\(name)").first { $0.hasSuffix(".mkv") })
        try fm.removeItem(atPath: "\(serve.root)/\(name)/\(video)")
        try fm.createSymbolicLink(atPath: "\(serve.root)/\(name)/\(video)", withDestinationPath: "\(outside)/\(video)")
        let archive = try serve.request("GET", "/api/v1/sessions/\(name)/archive")
        #expect(archive.status == 409, "\(archive.status)")
        #expect(archive.text.contains("\(name)/\(video)") && archive.text.contains("symbolic links"), "\(archive.text)")
        #expect(serve.terminate() == 0)
    }

    @Test(
        "hostile clients: silent, half, garbage, 100 kB URL, HTTP/9.9 connections closed; a flood past the descriptor limit leaves a segmented recording whole"
    )
    func hostileClients() throws {
        // 160 descriptors: before connections were capped, a flood took them all and the next
        // segment rotation failed ("Too many open files"), stopping the recording.
        let serve = try ServeProcess(
            Self.devices + ["--idle-timeout", "1s", "--wall-clock", "none"],
            launcher: ["/usr/bin/prlimit", "--nofile=160:160"])
        let port = try #require(serve.base.split(separator: ":").last.map(String.init))
        let cases = try runTool(
            "env", ["python3", Self.script("Clients/hostile_http.py"), "127.0.0.1", port, "cases", "8"])
        let closed = try #require(
            try JSONSerialization.jsonObject(with: Data(cases.output.utf8)) as? [String: [String: Any]],
            "\(cases.output)")
        #expect(closed.count == 6)
        for (name, result) in closed {
            #expect(result["closed"] as? Bool == true, "\(name) was held open: \(result)")
        }
        #expect(try serve.request("GET", "/api/health").status == 200)

        let started = try serve.request("POST", "/api/v1/recording/start", body: #"{"segment":"1s"}"#)
        #expect(started.status == 201, "\(started.text)")
        let flood = try runTool(
            "env", ["python3", Self.script("Clients/hostile_http.py"), "127.0.0.1", port, "flood", "400", "4.5"])
        #expect(flood.status == 0, "\(flood.output)")
        let stopped = try serve.request("POST", "/api/v1/recording/stop")
        #expect(stopped.status == 200, "\(stopped.text)")
        #expect(stopped.json["reason"] as? String == "stopped over the API", "\(stopped.text)\n\(serve.stderr)")
        let directory = try #require(stopped.json["directory"] as? String)
        let index =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(directory)/recording.json"))) as? [String: Any]
        let segments = index?["segments"] as? [[String: Any]] ?? []
        #expect(segments.count >= 4, "the recording rotated through the flood: \(segments.count) segments")
        #expect(segments.allSatisfy { $0["state"] as? String == "complete" }, "\(segments)")
        let validate = try runTool("env", [FieldcapProcess.executable.path, "validate", directory])
        #expect(validate.status == 0, "\(validate.output)")
        #expect(try serve.request("GET", "/api/health").status == 200)
        #expect(serve.terminate() == 0)
    }

    @Test(
        "every endpoint's real responses, idle and recording, with and without the token, match openapi.yaml (openapi-core)"
    )
    func openAPI() throws {
        let tokenFile = NSTemporaryDirectory() + "/token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let serve = try ServeProcess(Self.devices + ["--token-file", tokenFile])
        let token = try Self.token(in: tokenFile)
        let spec = Self.package.appendingPathComponent("Sources/FieldcapService/Web/openapi.yaml").path
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
        // Every path of the document was exercised (the events' WebSocket by its own test).
        let document = try String(contentsOfFile: spec, encoding: .utf8)
        let paths = document.split(separator: "\n").filter { $0.hasPrefix("  /") }.map {
            String($0.dropFirst(2).dropLast())
        }
        let called = Set(checks.compactMap { ($0["path"] as? String)?.split(separator: "?").first.map(String.init) })
        for path in paths where path != "/api/v1/events" && path != "/api/v1/openapi.yaml" {
            let pattern = path.replacingOccurrences(of: "{name}", with: "[^/]+")
                .replacingOccurrences(of: "{camera}", with: "[^/.]+")
            #expect(
                called.contains { $0.range(of: "^\(pattern)$", options: .regularExpression) != nil },
                "\(path) was not checked")
        }
        #expect(serve.terminate() == 0)
    }
}
