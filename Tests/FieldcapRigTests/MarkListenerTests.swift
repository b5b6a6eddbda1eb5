import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import Foundation
import Synchronization
import Testing

@testable import FieldcapRig

/// The marks socket against clients that misbehave: garbage, a line too long, a client that says
/// nothing; none of them stops the next client's mark, and the socket goes at the end.
@Suite("The marks socket and hostile clients")
struct MarkListenerTests {
    final class Taken: Sendable {
        let requests = Mutex<[MarkRequest]>([])
    }

    func listener(in directory: String, taken: Taken) throws -> MarkListener {
        let result = MarkListener.open(directory: directory) { request in
            taken.requests.withLock { $0.append(request) }
            if request.label == "refuse" { return .failure(MarkRefusal(.conflict, "refused on purpose")) }
            let mark = Mark(
                id: "m\(taken.requests.withLock { $0.count })", label: request.label, note: request.note,
                source: request.source, captureNs: 1, utc: "2026-11-30T00:00:00.000Z", beforeSeconds: 30,
                afterSeconds: 30)
            return .success((mark, []))
        }
        return try result.get()
    }

    /// Connects, sends `bytes` (then closes its sending side unless `holdOpen`), and reads the
    /// answer line.
    func exchange(_ name: String, _ bytes: [UInt8]) throws -> String {
        let socket = try StreamSocket.connect(abstract: name).get()
        defer { socket.close() }
        _ = bytes.withUnsafeBytes { socket.send($0) }
        socket.shutdownWriting()
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { raw -> Int in
                var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
                _ = StreamSocket.poll(&descriptors, timeoutMs: 5_000)
                if case .success(let count) = socket.receive(into: raw) { return count }
                return 0
            }
            if count <= 0 { break }
            answer += buffer[0..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test func hostileClientsAreAnsweredOrCutOffAndTheNextMarkGoesThrough() throws {
        let directory = NSTemporaryDirectory() + "marks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let taken = Taken()
        let listener = try listener(in: directory, taken: taken)
        let path = listener.name

        #expect(try exchange(path, Array(#"{"label":"near-miss","before":5}"#.utf8) + [10]).contains(#""id":"m1""#))
        #expect(try exchange(path, Array("not json\n".utf8)).contains(#""refusal":"bad_request""#))
        #expect(try exchange(path, Array(#"{"label":7}"#.utf8)).contains("not a mark request"))
        #expect(try exchange(path, [0, 0xFF, 0xFE, 10]).contains("not a mark request"))
        #expect(try exchange(path, Array(#"{"label":"refuse"}"#.utf8)).contains("refused on purpose"))
        // A line longer than a request may be: refused without reading all of it.
        let long = try exchange(path, Array(repeating: UInt8(ascii: "x"), count: 1 << 20))
        #expect(long.contains("longer than 16384 bytes"), "\(long.prefix(200))")
        // A client that connects and says nothing is cut off after the limit; the one after it is
        // answered.
        let silent = try StreamSocket.connect(abstract: path).get()
        let started = Date()
        #expect(try exchange(path, Array(#"{"label":"after-the-silent-one"}"#.utf8)).contains("after-the-silent-one"))
        let waited = Date().timeIntervalSince(started)
        #expect(waited < 4, "\(waited) s behind a silent client")
        silent.close()
        let labels = taken.requests.withLock { $0.map(\.label) }
        #expect(labels == ["near-miss", "refuse", "after-the-silent-one"])
        #expect(taken.requests.withLock { $0.allSatisfy { $0.source == "command" } })
        #expect(taken.requests.withLock { $0.first?.beforeSeconds } == 5)

        listener.close()
        // Gone with it: nothing to connect to, nothing left on disk.
        #expect(throws: Errno.self) { try StreamSocket.connect(abstract: path).get() }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func aRecordingDeeperThanASocketAddressHoldsIsReachedByItsName() throws {
        let top = NSTemporaryDirectory() + "marks-\(UUID().uuidString)"
        let directory = top + "/" + String(repeating: "d", count: 80) + "/" + String(repeating: "e", count: 80)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: top) }
        let listener = try listener(in: directory, taken: Taken())
        #expect(listener.name == MarkListener.name(of: directory))
        #expect(try exchange(listener.name, Array(#"{"label":"deep"}"#.utf8)).contains(#""label":"deep""#))
        // A second recorder into the same directory cannot take its name.
        #expect(throws: MarkListenerError.self) { try self.listener(in: directory, taken: Taken()) }
        listener.close()
    }
}
