import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import Glibc
import SyncField

/// A recording's marks socket, for as long as it records: `fieldcap mark` finds the recordings
/// running under a sessions root and sends each one request line (`MarkWire`), answered with the
/// mark as taken or why not.
///
/// The socket is in Linux's abstract namespace, named after the recording directory's device and
/// inode (`MarkListener.name`): no file, so it works on any file system the recording is on (a
/// FAT card, a 9p or FUSE share takes no socket file), however deep, and goes with the process
/// however it ends. Anyone on the host may connect, so each connection's peer is checked
/// (`SO_PEERCRED`, `SO_PEERGROUPS`): the user recording, a member of its group (the `fieldcap`
/// group, for a rig's service) or root marks; anyone else is told so before anything is read.
///
/// One thread (`fc-marks`) serves one connection at a time, each given `connectionLimitMs` to send
/// its line: a client that connects and says nothing holds no one else for longer than that.
/// Thread-bound: opened and closed by the recording's thread.
final class MarkListener {
    static let connectionLimitMs: Int32 = 2_000

    let name: String
    private let socket: StreamSocket
    private let stop = StopSignal()
    private var thread: DedicatedThread?

    /// The socket's name for the recording in `directory` (nil when it cannot be looked at).
    static func name(of directory: String) -> String? {
        SocketFiles.identity(directory).map { "fieldcap/marks/\($0.device):\($0.inode)" }
    }

    /// Listens for the recording in `directory`, each request handed to `mark`; why not, when it
    /// cannot (the name in use: another process records into the same directory).
    static func open(
        directory: String,
        mark: @escaping @Sendable (MarkRequest) -> Result<(mark: Mark, warnings: [String]), MarkRefusal>
    ) -> Result<MarkListener, MarkListenerError> {
        guard let name = name(of: directory) else {
            return .failure(MarkListenerError(path: directory, errno: .current))
        }
        switch StreamSocket.listen(abstract: name, backlog: 16) {
        case .failure(let error):
            return .failure(MarkListenerError(path: directory, errno: error))
        case .success(let socket):
            let listener = MarkListener(name: name, socket: socket)
            listener.thread = DedicatedThread(name: "fc-marks") { [listener] in listener.serve(mark) }
            return .success(listener)
        }
    }

    private init(name: String, socket: StreamSocket) {
        self.name = name
        self.socket = socket
    }

    /// Stops taking connections; the one being answered finishes.
    func requestStop() { stop.request() }

    /// Stops serving and waits for the thread; the name goes with the socket.
    func close() {
        stop.request()
        thread?.join()
        thread = nil
        socket.close()
    }

    private func serve(_ mark: @Sendable (MarkRequest) -> Result<(mark: Mark, warnings: [String]), MarkRefusal>) {
        var descriptors = [
            pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        while !stop.isRequested {
            guard case .success = StreamSocket.poll(&descriptors, timeoutMs: -1) else { continue }
            if stop.isRequested { break }
            // A bounded turn: the stop is looked at between connections.
            accepting: for _ in 0..<16 {
                switch socket.accept() {
                case .success(let connection):
                    answer(connection, mark)
                    connection.close()
                case .failure(let error) where error == .wouldBlock:
                    break accepting
                case .failure:
                    // Out of descriptors (EMFILE) and the like: a moment, then again.
                    _ = stop.wait(milliseconds: 100)
                }
                if stop.isRequested { break accepting }
            }
        }
    }

    /// Reads one request line within the limit and answers it.
    private func answer(
        _ connection: StreamSocket,
        _ mark: @Sendable (MarkRequest) -> Result<(mark: Mark, warnings: [String]), MarkRefusal>
    ) {
        // Who connected, before anything is read: another user is told so at once, and holds
        // the thread for no time.
        let peer = connection.peerUserID
        if peer != StreamSocket.userID && peer != 0 && !connection.peerIsInGroup(StreamSocket.groupID) {
            connection.sendWithoutWaiting(
                MarkWire.answerLine(
                    .failure(
                        MarkRefusal(
                            .conflict,
                            "only the user recording (uid \(StreamSocket.userID)), its group (gid "
                                + "\(StreamSocket.groupID), as the fieldcap group of a rig's service) or root may "
                                + "mark this recording, not uid \(peer.map(String.init) ?? "unknown")"))))
            return
        }
        let deadline = MonotonicClock.now() + UInt64(Self.connectionLimitMs) * 1_000_000
        var line: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var ended = false
        var descriptors = [
            pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        while !line.contains(UInt8(ascii: "\n")) && !ended && line.count <= MarkWire.maxRequestBytes {
            let now = MonotonicClock.now()
            guard now < deadline, !stop.isRequested else { return }
            let waitMs = Int32(clamping: (deadline - now) / 1_000_000 + 1)
            guard case .success(let ready) = StreamSocket.poll(&descriptors, timeoutMs: waitMs), ready > 0 else {
                continue
            }
            let received = buffer.withUnsafeMutableBytes { connection.receive(into: $0) }
            switch received {
            case .success(0): ended = true
            case .success(let count): line += buffer[0..<count]
            case .failure(let error) where error == .wouldBlock: continue
            case .failure: return
            }
        }
        let result: Result<(mark: Mark, warnings: [String]), MarkRefusal>
        if line.count > MarkWire.maxRequestBytes && !line.prefix(MarkWire.maxRequestBytes).contains(10) {
            result = .failure(MarkRefusal(.badRequest, "a request line longer than \(MarkWire.maxRequestBytes) bytes"))
        } else {
            let request = Array(line.prefix { $0 != UInt8(ascii: "\n") })
            do throws(MarkRefusal) {
                result = mark(try MarkWire.request(from: request, source: "command"))
            } catch {
                result = .failure(error)
            }
        }
        connection.sendWithoutWaiting(MarkWire.answerLine(result))
    }
}

/// The marks socket could not be made: marks from `fieldcap mark` do not reach this recording
/// (the API's, a fleet's, a GPIO line's and the terminal's still do).
struct MarkListenerError: Error, CustomStringConvertible {
    var path: String
    var errno: Errno
    var description: String {
        "\(path): cannot listen for marks (\(errno)); `fieldcap mark` cannot reach this recording"
    }
}
