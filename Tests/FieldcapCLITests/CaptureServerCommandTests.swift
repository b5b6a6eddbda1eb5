import Foundation
import Testing

@Suite("fieldcap serve --server: an AllSpark-style capture server", .serialized)
struct CaptureServerCommandTests {
    /// Clients/capture_server.py (written from the AllSpark app's protocol description) drives
    /// the rig through the protocol and checks each answer; this test checks what the rig
    /// recorded meanwhile.
    @Test("clientInfo, clientConfig, record, bad messages answered, the server restarted: the rig reconnects, no gap")
    func protocolAndReconnect() throws {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", ServeCommandTests.script("Clients/capture_server.py"), "--name", "rig-test-001"]
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
            ServeCommandTests.devices + ["--server", "ws://127.0.0.1:\(port)", "--name", "rig-test-001"])
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

    @Test("--server refuses what is not a WebSocket URL; --name without --server is a usage error")
    func refusals() throws {
        let bad = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--server", "http://x:1"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--server 'http://x:1': give the capture server as ws://HOST:PORT"))
        let lonely = try FieldcapProcess.run(["serve", "--cam", "synthetic", "--name", "rig"])
        #expect(lonely.status == 64)
        #expect(lonely.stderr.contains("--insecure and --name are for a capture server"))
    }
}
