import Foundation
import TestSupport
import Testing

/// The test's SyncField service (Clients/syncfield_service.py, written from the SDK README's
/// API, not from fieldcap's code) on a free loopback port; it exits by itself after two minutes.
final class SyncFieldServiceProcess {
    let process = Process()
    let store: String
    var port = 0
    var base: String { "http://127.0.0.1:\(port)" }

    init(failWith status: Int? = nil) throws {
        store = NSTemporaryDirectory() + "/syncfield-service-\(UUID().uuidString)"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "python3", ServeCommandTests.script("Clients/syncfield_service.py"), "--store", store, "--lifetime",
                "120",
            ]
            + (status.map { ["--fail-with", String($0)] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        // "listening PORT" once it accepts connections.
        var line = Data()
        while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line += byte
        }
        guard let port = String(decoding: line, as: UTF8.self).split(separator: " ").last.flatMap({ Int($0) }) else {
            process.terminate()
            throw ServeProcess.ServeFailure(description: "the test SyncField service did not start: \(line)")
        }
        self.port = port
    }

    /// What it stored and how it judged it (its received.json).
    var received: [[String: Any]] {
        let data = FileManager.default.contents(atPath: "\(store)/received.json") ?? Data("[]".utf8)
        return (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] ?? []
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: store)
    }
}

@Suite("fieldcap request and upload against a SyncField service", .serialized)
struct SyncServiceCommandTests {
    let root = NSTemporaryDirectory() + "/syncservice-cli-\(UUID().uuidString)"

    /// A synthetic session recorded by fieldcap: `cam_wrist` given first, then `cam_ego`, and an IMU.
    func record(
        host: String, size: String = "160x120", seconds: String = "1s", cameras: [String] = ["cam_wrist", "cam_ego"]
    )
        throws -> String
    {
        let out = "\(root)/\(host)"
        let result = try FieldcapProcess.run(
            ["record", "--out", out, "--host-id", host, "--duration", seconds, "--imu", "synthetic:200,id=imu"]
                + cameras.flatMap { ["--cam", "synthetic:\(size)@30,id=\($0)"] })
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// GNU time's "maxrss_kb=N" line.
    static func maxRSS(_ output: String) -> Int? {
        output.split(separator: "\n").last { $0.hasPrefix("maxrss_kb=") }.flatMap {
            Int($0.dropFirst("maxrss_kb=".count))
        }
    }

    func post(_ body: String, to service: SyncFieldServiceProcess) throws -> (status: Int32, output: String) {
        let file = "\(root)/body-\(UUID().uuidString).json"
        try body.write(toFile: file, atomically: true, encoding: .utf8)
        return try runTool(
            "curl",
            [
                "-sS", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(file)",
                "-w", "\n%{http_code}", "\(service.base)/api/v1/sync",
            ])
    }

    @Test("request: the body for one fieldcap session is what the service accepts, first camera given as primary")
    func requestOneSession() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(host: "rig_a")
        let service = try SyncFieldServiceProcess()
        let result = try FieldcapProcess.run(
            ["request", session, "--data-dir", session, "--timestamps-dir", session])
        #expect(result.status == 0, "\(result.stderr)")
        let answer = try post(result.stdout, to: service)
        #expect(answer.output.hasSuffix("\n200"), "\(answer.output)")
        // The first camera given to the recorder, not the first in alphabetical order.
        #expect(answer.output.contains("\"primary\":[\"rig_a\",\"cam_wrist\"]"))
        let body = try #require(service.received.first?["body"] as? [String: Any])
        let streams = try #require((body["hosts"] as? [[String: Any]])?.first?["streams"] as? [[String: Any]])
        #expect(streams.map { $0["stream_id"] as? String } == ["cam_wrist", "cam_ego", "imu"])
        #expect(streams[0]["path"] as? String == "\(session)/cam_wrist.mkv")
    }

    @Test("request: sessions from two rigs make one multi-host body the service accepts")
    func requestTwoRigs() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try record(host: "rig_a", cameras: ["cam_a"])
        let b = try record(host: "rig_b", cameras: ["cam_b"])
        // The rigs' timestamps, gathered where the service reads them (one timestamps_dir).
        let stamps = "\(root)/timestamps"
        try FileManager.default.createDirectory(atPath: stamps, withIntermediateDirectories: true)
        for (session, ids) in [(a, ["cam_a", "imu"]), (b, ["cam_b"])] {
            for id in ids {
                try FileManager.default.copyItem(
                    atPath: "\(session)/\(id).timestamps.jsonl", toPath: "\(stamps)/\(id).timestamps.jsonl")
            }
        }
        try FileManager.default.copyItem(atPath: "\(a)/imu.jsonl", toPath: "\(stamps)/imu.jsonl")
        // Both rigs have an IMU called imu: the service's one timestamps_dir cannot tell them
        // apart, which fieldcap warns about.
        let service = try SyncFieldServiceProcess()
        let result = try FieldcapProcess.run(
            ["request", a, b, "--primary", "cam_b", "--data-dir", root, "--timestamps-dir", stamps])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning: stream id imu is on more than one host"))
        let answer = try post(result.stdout, to: service)
        #expect(answer.output.hasSuffix("\n200"), "\(answer.output)")
        #expect(answer.output.contains("\"hosts\":2"))
        #expect(answer.output.contains("\"primary\":[\"rig_b\",\"cam_b\"]"))
    }

    @Test(
        """
        request --capture-id: the rigs' sessions of one capture, \
        found in their roots, make one body the service accepts
        """
    )
    func requestByCaptureId() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        func record(_ host: String, capture: String, into rig: String) throws -> String {
            let out = "\(root)/\(rig)/\(host)-\(capture)"
            let result = try FieldcapProcess.run([
                "record", "--out", out, "--host-id", host, "--duration", "1s", "--capture-id", capture,
                "--cam", "synthetic:160x120@30,id=cam_\(host)",
            ])
            try #require(result.status == 0, "\(result.stderr)")
            return out
        }
        let a = try record("rig_a", capture: "lab-0412", into: "rig1")
        _ = try record("rig_a", capture: "lab-0411", into: "rig1")
        let b = try record("rig_b", capture: "lab-0412", into: "rig2")
        #expect(try sidecar(a)["capture_id"] as? String == "lab-0412")
        let service = try SyncFieldServiceProcess()
        let stamps = "\(root)/timestamps"
        try FileManager.default.createDirectory(atPath: stamps, withIntermediateDirectories: true)
        for (session, id) in [(a, "cam_rig_a"), (b, "cam_rig_b")] {
            try FileManager.default.copyItem(
                atPath: "\(session)/\(id).timestamps.jsonl", toPath: "\(stamps)/\(id).timestamps.jsonl")
        }
        let result = try FieldcapProcess.run([
            "request", "--capture-id", "lab-0412", "\(root)/rig1", "\(root)/rig2/", "--timestamps-dir", stamps,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        // Both rigs' sessions of that capture, the other capture's passed over.
        #expect(result.stdout.contains("\(a)/cam_rig_a.mkv") && result.stdout.contains("\(b)/cam_rig_b.mkv"))
        #expect(!result.stdout.contains("lab-0411"))
        let answer = try post(result.stdout, to: service)
        #expect(answer.output.hasSuffix("\n200"), "\(answer.output)")
        #expect(answer.output.contains("\"hosts\":2"))

        let none = try FieldcapProcess.run(["request", "--capture-id", "lab-9999", "\(root)/rig1", "\(root)/rig2"])
        #expect(none.status == 66, "\(none.stderr)")
        #expect(none.stderr.hasPrefix("Error: no session of capture lab-9999 in \(root)/rig1, \(root)/rig2"))
        let bad = try FieldcapProcess.run([
            "record", "--out", "\(root)/bad", "--capture-id", "../x", "--imu", "synthetic:100", "--duration", "1s",
        ])
        #expect(bad.status == 64, "\(bad.stderr)")
        #expect(bad.stderr.contains("--capture-id '../x' cannot be used"), "\(bad.stderr)")
        #expect(!FileManager.default.fileExists(atPath: "\(root)/bad"))
    }

    @Test("request: bad input is one line naming the session or argument, with the documented status")
    func requestRefusals() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(host: "rig_a", cameras: ["cam0"])
        let again = "\(root)/again"
        try FileManager.default.copyItem(atPath: session, toPath: again)
        let imuOnly = try record(host: "rig_imu", cameras: [])
        let broken = "\(root)/broken"
        try FileManager.default.copyItem(atPath: session, toPath: broken)
        try FileManager.default.removeItem(atPath: "\(broken)/manifest.json")
        let cases: [([String], Int32, String)] = [
            ([session, again], 64, "are both from host rig_a"),
            ([imuOnly], 64, "have no video stream"),
            ([session, "--primary", "cam9"], 64, "--primary cam9: no video stream of that id; the videos are cam0"),
            ([broken], 66, "\(broken): no manifest.json"),
            (["\(root)/nowhere"], 66, "\(root)/nowhere: no such directory"),
        ]
        for (arguments, status, message) in cases {
            let result = try FieldcapProcess.run(["request"] + arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("Error: ") && lines[0].contains(message), "\(result.stderr)")
        }
    }

    @Test("upload: the service stores every file byte for byte; the video is streamed, never held in memory")
    func upload() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Two 640x480 YUYV cameras for 4 s: about 74 MB of video each.
        let session = try record(host: "rig_a", size: "640x480", seconds: "4s")
        let service = try SyncFieldServiceProcess()
        // GNU time's maximum resident set size (kB): the upload's whole footprint.
        let timed = try runTool(
            "time",
            ["-f", "maxrss_kb=%M", FieldcapProcess.executable.path, "upload", session, "--to", service.base])
        #expect(timed.status == 0, "\(timed.output)")
        #expect(timed.output.contains("uploading 6 files"))
        #expect(timed.output.contains("(100%)"), "\(timed.output)")  // the final progress line: all of it
        let answer = try #require(
            timed.output.split(separator: "\n").first { $0.hasPrefix("{") }.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }, "\(timed.output)")
        #expect(answer["status"] as? String == "ok")
        let stored = try #require(answer["stored"] as? [[String: Any]])
        #expect(stored.count == 6)
        for id in ["cam_wrist", "cam_ego", "imu"] {
            let files = id == "imu" ? ["imu.jsonl", "imu.timestamps.jsonl"] : ["\(id).mkv", "\(id).timestamps.jsonl"]
            for file in files {
                let original = try #require(FileManager.default.contents(atPath: "\(session)/\(file)"))
                let received = FileManager.default.contents(atPath: "\(service.store)/rig_a/\(file)")
                #expect(received == original, "\(file) differs from the session's")
            }
        }
        let record = try #require(service.received.first)
        #expect(record["primary_id"] as? String == "cam_wrist")
        #expect(record["stream_ids"] as? [String] == ["cam_wrist", "cam_ego", "imu"])
        #expect(record["host_ids"] as? [String] == ["rig_a", "rig_a", "rig_a"])
        let video = try #require(
            (try FileManager.default.attributesOfItem(atPath: "\(session)/cam_wrist.mkv")[.size] as? NSNumber)?.intValue
        )
        // The same binary reading the same session without sending it: what it holds anyway.
        let baseline = try runTool(
            "time", ["-f", "maxrss_kb=%M", FieldcapProcess.executable.path, "request", session])
        let rss = try #require(Self.maxRSS(timed.output)), base = try #require(Self.maxRSS(baseline.output))
        // Sending it cost less memory than half of one video (it measured 17 MB in flight,
        // whatever the file's size: 55 MB and 224 MB alike).
        #expect(
            (rss - base) * 1024 < video / 2,
            "upload's peak RSS \(rss) kB, \(base) kB without sending, a \(video)-byte video")
    }

    @Test("upload: a service answering 500 has its message shown, exit 1")
    func serviceError() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(host: "rig_a", cameras: ["cam0"])
        let service = try SyncFieldServiceProcess(failWith: 500)
        let result = try FieldcapProcess.run(["upload", session, "--to", service.base])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr.contains(
                "Error: the SyncField service answered 500 Internal Server "
                    + "Error: alignment worker crashed (test service told to fail)"
            ), "\(result.stderr)")
    }

    @Test("upload: an unreachable service is one line and exit 69; a bad URL exit 64")
    func unreachable() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        let session = try record(host: "rig_a", cameras: ["cam0"])
        // A port that was free a moment ago: nothing listens there.
        let socket = try runTool(
            "python3", ["-c", "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])"])
        let port = socket.output.trimmingCharacters(in: .whitespacesAndNewlines)
        let result = try FieldcapProcess.run(["upload", session, "--to", "http://127.0.0.1:\(port)"])
        #expect(result.status == 69)
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
        #expect(
            errors == [
                "Error: cannot reach the SyncField service at "
                    + "http://127.0.0.1:\(port)/api/v1/sync/upload: connection refused"
            ])
        let bad = try FieldcapProcess.run(["upload", session, "--to", "aligner:8080"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--to aligner:8080: give the service's base URL, like http://HOST:8080"))
    }
}
