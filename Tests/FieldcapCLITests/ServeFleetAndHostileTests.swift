import Foundation
import Synchronization
import TestSupport
import Testing

@Suite("fieldcap serve: the fleet, damaged sessions and hostile clients", .serialized)
struct ServeFleetAndHostileTests: ServeSuite {
    @Test(
        """
        a fleet of three rigs in network namespaces over a real mosquitto: \
        start at one instant, a rig killed, the broker restarted, stop
        """
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
        """
        a fleet's start on a real mosquitto: a retained one ignored, one beyond the horizon \
        refused, a scheduled one called off by `fleet stop` and by the API, nothing left on disk
        """
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
        """
        damaged sessions and hostile requests get one JSON error and leave serve up: \
        capture_ns 2^63 - 1, a missing video, racing deletes, a huge body, bad offsets
        """
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
        // HEAD of an extract: GET's status and headers, and no extract left behind in the root.
        let port = try #require(serve.base.split(separator: ":").last.map(String.init))
        let extractPath = "/api/v1/extract?from=\(from)&to=2400-01-01T00:00:00Z&session=\(name)"
        let extractHead = try runTool(
            "env", ["python3", Self.script("Clients/hostile_http.py"), "127.0.0.1", String(port), "head", extractPath])
        let extractAnswer = try #require(
            (try JSONSerialization.jsonObject(with: Data(extractHead.output.utf8)) as? [String: [String: Any]])?[
                extractPath], "\(extractHead.output)")
        #expect(serve.sessionNames().filter { $0.hasPrefix(".extract-") }.isEmpty, "\(serve.sessionNames())")
        let extractGet = try serve.request("GET", extractPath)
        #expect(extractGet.status == 200, "\(extractGet.status) \(extractGet.text.prefix(300))")
        #expect(extractAnswer["status"] as? Int == extractGet.status, "\(extractAnswer)")
        #expect((extractAnswer["headers"] as? [String: String])?["content-type"] == "application/x-tar")
        #expect(extractAnswer["bytes_after_headers"] as? Int == 0, "\(extractAnswer)")
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
        """
        without a token: another site's page (Origin) and DNS rebinding \
        (Host) get 403 and start nothing; the rig's own page and curl pass
        """
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
        // Refused, not upgraded (101), with the reason as every other request gets it.
        #expect(socket.status == 403, "a cross-site WebSocket: \(socket.status) \(socket.text)")
        #expect((socket.json["error"] as? String)?.contains("evil.example") == true, "\(socket.text)")
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
        """
        hostile clients: silent, half, garbage, 100 kB URL, HTTP/9.9 connections closed; HEAD answered \
        as GET without its body; a flood past the descriptor limit leaves a segmented recording whole
        """
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

        // HEAD is answered as GET, without the body: a monitoring probe's and `curl -I`'s way in.
        let heads = try runTool(
            "env",
            [
                "python3", Self.script("Clients/hostile_http.py"), "127.0.0.1", port, "head", "/api/v1/status",
                "/api/v1/recording/start", "/api/v1/nothing-here",
            ])
        let answers = try #require(
            try JSONSerialization.jsonObject(with: Data(heads.output.utf8)) as? [String: [String: Any]],
            "\(heads.output)")
        let status = try #require(answers["/api/v1/status"])
        let statusHeaders = status["headers"] as? [String: String] ?? [:]
        #expect(status["status"] as? Int == 200, "\(status)")
        #expect(statusHeaders["content-type"]?.hasPrefix("application/json") == true, "\(status)")
        #expect(Int(statusHeaders["content-length"] ?? "") ?? 0 > 0, "the GET's length: \(status)")
        let start = try #require(answers["/api/v1/recording/start"])
        #expect(start["status"] as? Int == 405, "\(start)")
        #expect((start["headers"] as? [String: String])?["allow"] == "POST", "\(start)")
        #expect(answers["/api/v1/nothing-here"]?["status"] as? Int == 404, "\(answers)")
        for (path, answer) in answers {
            #expect(answer["bytes_after_headers"] as? Int == 0, "HEAD \(path) sent a body: \(answer)")
        }

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

}
