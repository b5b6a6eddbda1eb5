import Foundation
import TestSupport
import Testing

/// `fieldcap serve --foxglove`, spoken to by a Foxglove WebSocket client written from the
/// protocol's specification (Clients/foxglove_client.py, with the `websockets` library).
@Suite("fieldcap serve --foxglove: the rig live in Foxglove", .serialized)
struct FoxgloveCommandTests {
    static let devices = [
        "--cam", "synthetic:320x240@30,id=cam", "--imu", "synthetic:1000,id=imu", "--foxglove", "127.0.0.1:0",
    ]

    /// "Foxglove WebSocket on ws://127.0.0.1:PORT/ (...)", once the server listens.
    static func url(_ serve: ServeProcess) throws -> String {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let line = serve.stderr.split(separator: "\n").first(where: { $0.hasPrefix("Foxglove WebSocket on ") }),
                let url = line.split(separator: " ").first(where: { $0.hasPrefix("ws://") })
            {
                return String(url)
            }
            usleep(50_000)
        }
        throw ServeProcess.ServeFailure(description: "no Foxglove listener: \(serve.stderr)")
    }

    static func client(_ arguments: [String]) throws -> (status: Int32, output: String) {
        try runTool("env", ["python3", ServePreviewCommandTests.script("Clients/foxglove_client.py")] + arguments)
    }

    static func json(_ path: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))) as? [String: Any] ?? [:]
    }

    @Test(
        """
        a client written from the specification: server info, the channels, a camera's JPEGs, every IMU \
        sample (the recorded values for the same capture_ns) and the status, idle and while recording; \
        unsubscribe, reconnect
        """
    )
    func specificationClient() throws {
        let serve = try ServeProcess(Self.devices)
        let url = try Self.url(serve)
        let result = NSTemporaryDirectory() + "/foxglove-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: result) }
        let run = try Self.client(["check", url, serve.base, result])
        #expect(run.status == 0, "\(run.output)")
        let found = Self.json(result)
        #expect(found["channels"] as? [String] == ["/cam/preview", "/imu", "/fieldcap/status", "/fieldcap/clock"])
        // Synthetic devices are stamped in RAW: the clock channel says so with no stream in it.
        #expect(found["clock_streams"] as? [String] == [], "\(found)")
        let compared = found["imu_compared"] as? [String: Int] ?? [:]
        #expect(compared["values_differ"] == 0 && compared["missing"] == 0, "\(compared)")
        // A 3 s recording of a 1 kHz IMU: nearly every sample reached the client.
        #expect((compared["received_during"] ?? 0) >= (compared["recorded"] ?? 1) * 9 / 10, "\(compared)")
        for phase in ["idle", "recording"] {
            let seen = found[phase] as? [String: Any] ?? [:]
            #expect((seen["image_sizes"] as? [[Int]]) == [[320, 240]], "\(phase): \(seen)")
            #expect((seen["images"] as? Int ?? 0) >= 10, "\(phase): \(seen)")
        }
        #expect(serve.terminate() == 0, "\(serve.stderr)")
    }

    @Test(
        """
        hostile messages get a status and end nothing; a client reading one message a second costs a fast one \
        nothing and the rig no memory growth; one that never reads is closed; no foreign page
        """
    )
    func hostileAndSlowClients() throws {
        let serve = try ServeProcess(Self.devices)
        let url = try Self.url(serve)
        // A client that never reads, from the start: its connection is reset once a write has
        // waited 10 s (FoxgloveConnection.writeDeadline), and holds nothing up meanwhile. Writes
        // wait once the kernel's send buffer is full (megabytes on loopback: 15 s or so here).
        let stuckResult = NSTemporaryDirectory() + "/foxglove-stuck-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: stuckResult) }
        let stuck = Process()
        stuck.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        stuck.arguments = [
            "python3", ServePreviewCommandTests.script("Clients/foxglove_client.py"), "stuck", url, stuckResult,
        ]
        stuck.standardOutput = FileHandle.nullDevice
        try stuck.run()
        let hostile = try Self.client(["hostile", url])
        #expect(hostile.status == 0, "\(hostile.output)")
        let slowResult = NSTemporaryDirectory() + "/foxglove-slow-\(UUID().uuidString).json"
        let fastResult = NSTemporaryDirectory() + "/foxglove-fast-\(UUID().uuidString).json"
        defer { for path in [slowResult, fastResult] { try? FileManager.default.removeItem(atPath: path) } }
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        slow.arguments = [
            "python3", ServePreviewCommandTests.script("Clients/foxglove_client.py"), "slow", url, "8", slowResult,
        ]
        slow.standardOutput = FileHandle.nullDevice
        let before = Self.residentBytes(serve.process.processIdentifier)
        try slow.run()
        sleep(2)
        let fast = try Self.client(["watch", url, "5", fastResult])
        let after = Self.residentBytes(serve.process.processIdentifier)
        slow.waitUntilExit()
        #expect(fast.status == 0 && slow.terminationStatus == 0, "\(fast.output)")
        let counts = Self.json(fastResult)["counts"] as? [String: Int] ?? [:]
        // 5 s of a 1 kHz IMU beside the slow client; the preview at its 10 frames a second.
        #expect((counts["/imu"] ?? 0) >= 4_500, "\(counts)")
        #expect((counts["/cam/preview"] ?? 0) >= 25, "\(counts)")
        // What the slow client has not read is held to a bound: a few MB, not 1,000 samples a second.
        #expect(after - before < 24 << 20, "the rig grew by \((after - before) >> 20) MB while a client was slow")
        stuck.waitUntilExit()
        let closedAfter = Self.json(stuckResult)["closed_after_s"] as? Double
        #expect(
            closedAfter.map { (10...49).contains($0) } == true,
            "closed after \(closedAfter.map { "\($0) s" } ?? "never")")
        #expect(serve.terminate() == 0, "\(serve.stderr)")
    }

    @Test("with a token, a client without it is refused and one with ?token= or Authorization: Bearer is served")
    func token() throws {
        let tokenFile = NSTemporaryDirectory() + "/foxglove-token-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: tokenFile) }
        let serve = try ServeProcess(Self.devices + ["--token-file", tokenFile])
        let url = try Self.url(serve)
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        let refused = try Self.client(["hello", url])
        #expect(refused.status != 0, "\(refused.output)")
        let served = try Self.client(["hello", url + "?token=" + token])
        #expect(served.status == 0, "\(served.output)")
        let bearer = try Self.client(["hello", url, token])
        #expect(bearer.status == 0, "\(bearer.output)")
        #expect(served.output.contains("4 channels"), "\(served.output)")
        #expect(serve.terminate() == 0, "\(serve.stderr)")
    }

    @Test("--foxglove-max-rate caps each IMU channel's messages; a rate out of range is refused")
    func rateCap() throws {
        let serve = try ServeProcess(Self.devices + ["--foxglove-max-rate", "100"])
        let url = try Self.url(serve)
        let result = NSTemporaryDirectory() + "/foxglove-cap-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: result) }
        let watch = try Self.client(["watch", url, "3", result])
        #expect(watch.status == 0, "\(watch.output)")
        let counts = Self.json(result)["counts"] as? [String: Int] ?? [:]
        // 100 a second of the 1 kHz IMU for 3 s (the first batch may come late).
        #expect((200...330).contains(counts["/imu"] ?? 0), "\(counts)")
        let bad = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--foxglove-max-rate", "0"])
        #expect(bad.status == 64 && bad.stderr.contains("--foxglove-max-rate 0.0 is out of range"), "\(bad.stderr)")
        #expect(serve.terminate() == 0, "\(serve.stderr)")
    }

    @Test("a fed stream is a channel of its records while a recording runs, as the program sent them")
    func feed() throws {
        let socket = NSTemporaryDirectory() + "/fox-feed-\(UUID().uuidString.prefix(8)).sock"
        let serve = try ServeProcess([
            "--cam", "synthetic:160x120@10,id=cam", "--sensor", "feed:grip,socket=\(socket),rate=100",
            "--foxglove", "127.0.0.1:0",
        ])
        let url = try Self.url(serve)
        let result = NSTemporaryDirectory() + "/foxglove-feed-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: result) }
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        watcher.arguments = [
            "python3", ServePreviewCommandTests.script("Clients/foxglove_client.py"), "watch", url, "5", result,
        ]
        watcher.standardOutput = FileHandle.nullDevice
        try watcher.run()
        sleep(1)
        let started = try serve.request("POST", "/api/v1/recording/start", body: #"{"duration":"4s"}"#)
        #expect(started.status == 201, "\(started.text)")
        let fed = try runTool(
            "env",
            [
                "python3", ServePreviewCommandTests.script("Clients/feeder.py"), socket, "--rate", "100", "--seconds",
                "2",
            ])
        #expect(fed.status == 0, "\(fed.output)")
        watcher.waitUntilExit()
        let found = Self.json(result)
        let counts = found["counts"] as? [String: Int] ?? [:]
        let sent = Int(fed.output.split(separator: "\n").last ?? "") ?? 0
        // Every record the program sent reached the client (it read as fast as they came).
        #expect(sent >= 150 && counts["/grip"] == sent, "sent \(sent), \(counts)")
        let example = (found["examples"] as? [String: Any])?["/grip"] as? [String: Any]
        let channels = example?["channels"] as? [String: Any]
        #expect(channels?["xyz"] as? [Double] == [0.5, -1.25, Double(channels?["i"] as? Int ?? -1) * 1e-3], "\(found)")
        #expect(serve.terminate() == 0, "\(serve.stderr)")
    }

    @Test("a bad --foxglove address is one line naming it, exit 64; one in use, exit 1")
    func badAddress() throws {
        let bad = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--foxglove", "8765"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--foxglove '8765' is not ADDR:PORT"), "\(bad.stderr)")
        let first = try ServeProcess(Self.devices)
        let address = try Self.url(first).dropFirst("ws://".count).dropLast()
        let taken = try FieldcapProcess.run(
            ["serve", "--cam", "synthetic", "--listen", "127.0.0.1:0", "--scmf", "off", "--foxglove", String(address)])
        #expect(taken.status == 1)
        #expect(taken.stderr.contains("Error: --foxglove \(address):"), "\(taken.stderr)")
        #expect(first.terminate() == 0)
    }

    static func residentBytes(_ pid: Int32) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
}
