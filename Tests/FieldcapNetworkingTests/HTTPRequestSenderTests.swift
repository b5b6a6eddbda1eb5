import FieldcapNetworking
import Foundation
import NIOCore
import TestSupport
import Testing

/// The upload's HTTP/1.1 request against servers written here in Python's socket module (not
/// NIO's, so that the codec is not tested against itself): one that reads everything and says
/// what it got, one that refuses early, one that hangs up, one that speaks TLS.
@Suite("One HTTP request with a streamed body")
struct HTTPRequestSenderTests {
    /// A one-connection server on loopback; `mode` picks its behaviour (`closed`: a port nothing
    /// listens on). It prints its port, and stops by itself after one connection, or after 10
    /// minutes (a test run that keeps every thread busy can take minutes to get to it).
    final class PythonServer {
        let process = Process()
        let port: Int

        init(mode: String, certificate: String? = nil) throws {
            let script = #"""
                import hashlib, json, socket, ssl, sys
                mode = sys.argv[1]
                listener = socket.socket()
                listener.bind(("127.0.0.1", 0))
                if mode == "closed":
                    print(listener.getsockname()[1], flush=True)
                    sys.exit(0)
                listener.listen(1)
                listener.settimeout(600)
                print(listener.getsockname()[1], flush=True)
                connection, _ = listener.accept()
                connection.settimeout(600)
                if mode == "tls":
                    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                    context.load_cert_chain(sys.argv[2], sys.argv[3])
                    try:
                        connection = context.wrap_socket(connection, server_side=True)
                    except ssl.SSLError:
                        sys.exit(0)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        sys.exit(0)
                    data += chunk
                head, body = data.split(b"\r\n\r\n", 1)
                lines = head.decode().split("\r\n")
                headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
                if mode == "early":
                    connection.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n\r\ntoo large")
                    connection.shutdown(socket.SHUT_WR)
                    while connection.recv(1 << 20):
                        pass
                    sys.exit(0)
                length = int(headers["content-length"])
                digest = hashlib.sha256(body)
                received = len(body)
                while received < length:
                    chunk = connection.recv(1 << 20)
                    if not chunk:
                        break
                    digest.update(chunk)
                    received += len(chunk)
                if mode == "hangup":
                    connection.close()
                    sys.exit(0)
                answer = json.dumps({"request": lines[0], "host": headers.get("host"), "received": received,
                                     "sha256": digest.hexdigest()}).encode()
                connection.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer))
                connection.close()
                """#
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", script, mode] + (certificate.map { [$0 + ".crt", $0 + ".key"] } ?? [])
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let byte = output.fileHandleForReading.readData(ofLength: 1)
                guard !byte.isEmpty else { throw CocoaError(.fileReadUnknown) }
                line += byte
            }
            port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
        }

        deinit {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
    }

    /// `count` chunks of 1 MiB, each filled with its own number.
    struct Chunks: AsyncSequence, Sendable {
        let count: Int
        func makeAsyncIterator() -> AsyncStream<ByteBuffer>.Iterator {
            let count = count
            return AsyncStream { continuation in
                for index in 0..<count {
                    continuation.yield(ByteBuffer(repeating: UInt8(index & 0xFF), count: 1 << 20))
                }
                continuation.finish()
            }.makeAsyncIterator()
        }

        var sha256: String {
            get throws {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("chunks-\(UUID())")
                defer { try? FileManager.default.removeItem(at: file) }
                var bytes = Data()
                for index in 0..<count { bytes += Data(repeating: UInt8(index & 0xFF), count: 1 << 20) }
                try bytes.write(to: file)
                let result = try runTool("sha256sum", [file.path])
                return String(result.output.prefix(64))
            }
        }
    }

    @Test("a 32 MiB body arrives whole, announced with its length, host and target")
    func streamsTheBody() async throws {
        let server = try PythonServer(mode: "echo")
        let body = Chunks(count: 32)
        let answer = try await HTTPRequestSender().send(
            method: .POST, to: try .init(url: "http://127.0.0.1:\(server.port)/base/api?x=1"),
            headers: [("Content-Type", "application/octet-stream")], body: body, length: Int64(32 << 20))
        #expect(answer.status == 201)
        #expect(answer.reason == "Created")
        let got = try JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as! [String: Any]
        #expect(got["request"] as? String == "POST /base/api?x=1 HTTP/1.1")
        #expect(got["host"] as? String == "127.0.0.1:\(server.port)")
        #expect(got["received"] as? Int == 32 << 20)
        #expect(got["sha256"] as? String == (try body.sha256))
    }

    @Test("a service that answers before the body is sent: its answer, not a broken pipe")
    func earlyAnswer() async throws {
        let server = try PythonServer(mode: "early")
        let answer = try await HTTPRequestSender().send(
            method: .POST, to: try .init(url: "http://127.0.0.1:\(server.port)/upload"), headers: [],
            body: Chunks(count: 64), length: Int64(64 << 20))
        #expect(answer.status == 413)
        #expect(String(buffer: answer.body) == "too large")
    }

    @Test("a service that hangs up without answering")
    func hangUp() async throws {
        let server = try PythonServer(mode: "hangup")
        await #expect(throws: HTTPRequestSender.Failure.closedEarly) {
            _ = try await HTTPRequestSender().send(
                method: .POST, to: try .init(url: "http://127.0.0.1:\(server.port)/"), headers: [],
                body: Chunks(count: 2), length: Int64(2 << 20))
        }
    }

    @Test("https speaks TLS and checks the certificate: a self-signed one is refused, in one line")
    func tlsChecksTheCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("server").path
        let made = try runTool(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-keyout", certificate + ".key", "-out", certificate + ".crt",
            ])
        try #require(made.status == 0, "openssl: \(made.output)")
        let server = try PythonServer(mode: "tls", certificate: certificate)
        do {
            _ = try await HTTPRequestSender().send(
                method: .POST, to: try .init(url: "https://127.0.0.1:\(server.port)/"), headers: [],
                body: Chunks(count: 1), length: Int64(1 << 20))
            Issue.record("a self-signed certificate was accepted")
        } catch let failure as HTTPRequestSender.Failure {
            #expect(failure.description.hasPrefix("TLS failed: "), "\(failure)")
            #expect(!failure.description.contains("\n"))
        }
    }

    @Test("nothing listening: connection refused, after trying for the connect timeout")
    func refused() async throws {
        // A port that was bound a moment ago, and nothing listens on.
        let port = try PythonServer(mode: "closed").port
        let sender = HTTPRequestSender(connectTimeout: .milliseconds(500))
        await #expect(throws: HTTPRequestSender.Failure.noConnection("connection refused")) {
            _ = try await sender.send(
                method: .POST, to: try .init(url: "http://127.0.0.1:\(port)/"), headers: [], body: Chunks(count: 1),
                length: Int64(1 << 20))
        }
    }

    @Test("URLs: scheme, host, default ports, target; anything else is a bad URL")
    func endpoints() throws {
        let plain = try HTTPRequestSender.Endpoint(url: "http://rig.local/api/v1/sync/upload")
        #expect(!plain.secure && plain.host == "rig.local" && plain.port == 80 && plain.target == "/api/v1/sync/upload")
        let secure = try HTTPRequestSender.Endpoint(url: "HTTPS://aligner:8443")
        #expect(secure.secure && secure.host == "aligner" && secure.port == 8443 && secure.target == "/")
        let defaultPort = try HTTPRequestSender.Endpoint(url: "https://aligner")
        #expect(defaultPort.port == 443)
        let v6 = try HTTPRequestSender.Endpoint(url: "http://[::1]:8080/a%20b?c=d")
        #expect(v6.host == "::1")
        #expect(v6.target == "/a%20b?c=d")
        for bad in ["aligner:8080", "ftp://host/", "http://", "not a url"] {
            #expect(throws: HTTPRequestSender.Failure.badURL(bad)) { _ = try HTTPRequestSender.Endpoint(url: bad) }
        }
    }
}
