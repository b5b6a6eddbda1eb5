import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// The other end of `MarkListener`: finds the recordings running under a sessions root (or the
/// one in a directory) and sends each a mark. What `fieldcap mark` does, for any program.
public enum MarkClient {
    /// Why a mark did not reach a recording.
    public struct Failure: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    /// The marks sockets at `place`: a recording's own directory, or, in a sessions root, those of
    /// each recording running there (the directory locked by its recorder), sorted by name. A
    /// socket left by a recorder that was killed is not one.
    public static func sockets(at place: String) -> [String] {
        if let own = liveSocket(in: place) { return [own] }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: place) else { return [] }
        return names.sorted().compactMap { name in
            name.hasPrefix(".") ? nil : liveSocket(in: "\(place)/\(name)")
        }
    }

    private static func liveSocket(in directory: String) -> String? {
        let path = "\(directory)/\(MarkListener.fileName)"
        guard case .success(.socket) = SocketFiles.entry(at: path), RecordingLock.isHeld(directory: directory) else {
            return nil
        }
        return path
    }

    /// Sends `request` to the socket at `path` and waits (up to `timeoutMs`) for the answer.
    public static func send(
        _ request: MarkRequest, to path: String, timeoutMs: Int32 = 5_000
    ) -> Result<
        MarkWire.Answer, Failure
    > {
        let socket: StreamSocket
        switch StreamSocket.connect(to: path) {
        case .success(let connected): socket = connected
        case .failure(let error):
            return .failure(Failure(message: "\(path): cannot connect (\(error)); has the recording stopped?"))
        }
        defer { socket.close() }
        if let error = MarkWire.requestLine(request).withUnsafeBytes({ socket.send($0) }) {
            return .failure(Failure(message: "\(path): cannot send the mark (\(error))"))
        }
        socket.shutdownWriting()
        let deadline = MonotonicClock.now() + UInt64(timeoutMs) * 1_000_000
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        while !line.contains(UInt8(ascii: "\n")) && line.count < 1 << 20 {
            let now = MonotonicClock.now()
            guard now < deadline else {
                return .failure(Failure(message: "\(path): the recording did not answer within \(timeoutMs / 1000) s"))
            }
            let waitMs = Int32(clamping: (deadline - now) / 1_000_000 + 1)
            guard case .success(let ready) = StreamSocket.poll(&descriptors, timeoutMs: waitMs), ready > 0 else {
                continue
            }
            let received = buffer.withUnsafeMutableBytes { socket.receive(into: $0) }
            guard case .success(let count) = received, count > 0 else { break }
            line += buffer[0..<count]
        }
        guard let answer = MarkWire.answer(from: Array(line.prefix { $0 != UInt8(ascii: "\n") })) else {
            return .failure(Failure(message: "\(path): the recording closed the connection without an answer"))
        }
        return .success(answer)
    }
}
