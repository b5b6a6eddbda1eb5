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

    /// A recording running, and its marks socket's name.
    public struct Recording: Sendable, Equatable {
        public var directory: String
        public var socket: String
    }

    /// The recordings running at `place`: its own (a recording's directory), or each one directly
    /// in it (a sessions root), sorted by name. Running: its recorder holds the directory's lock.
    public static func recordings(at place: String) -> [Recording] {
        if let own = running(place) { return [own] }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: place) else { return [] }
        return names.sorted().compactMap { name in
            name.hasPrefix(".") || PathName.isSymbolicLink("\(place)/\(name)") ? nil : running("\(place)/\(name)")
        }
    }

    private static func running(_ directory: String) -> Recording? {
        guard RecordingLock.isHeld(directory: directory), let name = MarkListener.name(of: directory) else {
            return nil
        }
        return Recording(directory: directory, socket: name)
    }

    /// Sends `request` to `recording` and waits (up to `timeoutMs`) for the answer.
    public static func send(
        _ request: MarkRequest, to recording: Recording, timeoutMs: Int32 = 5_000
    ) -> Result<
        MarkWire.Answer, Failure
    > {
        var connection = StreamSocket.connect(abstract: recording.socket)
        // A recording that holds its directory and is not listening yet is starting (its devices
        // opening): it listens once capture runs.
        let startingDeadline = MonotonicClock.now() + 3_000_000_000
        while case .failure(let error) = connection, error.rawValue == ECONNREFUSED,
            MonotonicClock.now() < startingDeadline, RecordingLock.isHeld(directory: recording.directory)
        {
            usleep(50_000)
            connection = StreamSocket.connect(abstract: recording.socket)
        }
        let socket: StreamSocket
        switch connection {
        case .success(let connected): socket = connected
        case .failure(let error):
            return .failure(
                Failure(
                    message:
                        "\(recording.directory): cannot reach its recorder (\(error)); is it recorded in another "
                        + "network namespace or container, or stopping?"))
        }
        defer { socket.close() }
        // The name is anyone's to take: only the recording directory's owner (who made it by
        // recording) or root is its recorder. Another user's listener gets no label or note.
        var info = stat()
        if stat(recording.directory, &info) == 0, let peer = socket.peerUserID, peer != info.st_uid, peer != 0 {
            return .failure(
                Failure(
                    message:
                        "\(recording.directory): its marks socket is held by uid \(peer), not by the recording's "
                        + "owner (uid \(info.st_uid)): nothing sent"))
        }
        // A refusal (another user's) comes before the request is read: the answer is read even
        // when sending failed.
        let sendError = MarkWire.requestLine(request).withUnsafeBytes({ socket.send($0) })
        socket.shutdownWriting()
        let deadline = MonotonicClock.now() + UInt64(timeoutMs) * 1_000_000
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        while !line.contains(UInt8(ascii: "\n")) && line.count < 1 << 20 {
            let now = MonotonicClock.now()
            guard now < deadline else {
                return .failure(
                    Failure(
                        message: "\(recording.directory): the recording did not answer within \(timeoutMs / 1000) s"))
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
            if let sendError {
                return .failure(Failure(message: "\(recording.directory): cannot send the mark (\(sendError))"))
            }
            return .failure(
                Failure(message: "\(recording.directory): the recording closed the connection without an answer"))
        }
        return .success(answer)
    }
}
