import ArgumentParser
import FieldcapCore
import FieldcapFeeds
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap feed`: standard input's JSON lines into a running recording's feed, for shell
/// pipelines and programs that only print.
struct Feed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Feed a recording's sensor stream from standard input, one JSON record per line.",
        discussion: """
            A recording started with --sensor feed:NAME opens a socket that takes one program's \
            records; this sends standard input there, line by line, as it comes. Each line is \
            one record, as the SyncField SDK's record() takes it:

              {"channels": {"width": 0.04, "force": [1.2, 0.3, 9.8]}}
              {"capture_ns": 81234567890123, "uncertainty_ns": 200000, "channels": {...}}

            capture_ns is CLOCK_MONOTONIC_RAW (the same clock in every process) read at the \
            sensor's I/O; a line without it is stamped when fieldcap receives it. A line that is \
            no record is counted and shown by the recording, which goes on.

            Examples:
              my_gripper_driver --json | fieldcap feed gripper
              fieldcap feed /run/fieldcap/feeds/gripper.sock --wait 10 < lines.jsonl

            It waits for the recording's first line (fieldcap: ready feed:NAME) before \
            sending. Lines with an old capture_ns (a file recorded earlier) are refused as \
            outside the session: replay lines without it.

            Exit status: 0 once standard input ended and every line was sent, 1 when the \
            recording refused this program (another one feeds it) or closed the feed first, \
            69 when no recording listens there.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "The feed: its NAME (the socket --sensor feed:NAME opens by default) or its socket's path.",
            valueName: "FEED"))
    var feed: String

    @Option(help: ArgumentHelp("Wait this many seconds for the recording to open the feed.", valueName: "SECONDS"))
    var wait: Double = 0

    func validate() throws {
        guard wait >= 0, wait <= 3600 else { throw ValidationError("--wait \(wait): give seconds from 0 to 3600") }
    }

    func run() throws {
        // By name: this user's default socket, or a service's (root's) where this user has none.
        let own = FeedSocket.path(name: feed, given: nil, environment: ProcessInfo.processInfo.environment)
        let service = "/run/fieldcap/feeds/\(feed).sock"
        let path =
            feed.contains("/")
            ? feed
            : (!FileManager.default.fileExists(atPath: own) && FileManager.default.fileExists(atPath: service)
                ? service : own)
        let socket = try connect(path)
        defer { socket.close() }
        try waitUntilTaken(socket)
        while let line = readLine(strippingNewline: true) {
            try refuseIfClosed(socket, waitingMs: 0)
            if let error = Array((line + "\n").utf8).withUnsafeBytes({ socket.send($0) }) {
                say("Error: \(feed.printable): the recording closed the feed (\(error))")
                throw ExitCode(1)
            }
        }
        socket.shutdownWriting()
    }

    /// Connects, trying again for `--wait` seconds while nothing listens.
    private func connect(_ path: String) throws -> StreamSocket {
        let deadline = MonotonicClock.now() + UInt64(wait * 1e9)
        while true {
            switch StreamSocket.connect(to: path) {
            case .success(let socket): return socket
            case .failure(let error):
                if MonotonicClock.now() < deadline {
                    usleep(100_000)
                    continue
                }
                say(
                    "Error: \(path.printable): cannot connect (\(error)); is a recording with --sensor "
                        + "feed:\(Self.feedName(path)) running? "
                        + "(--wait SECONDS waits for it)")
                throw ExitCode(69)
            }
        }
    }

    /// Waits (up to 5 s) for the recording's first line: `fieldcap: ready feed:NAME` when it took
    /// this program, else why it refused it (exit status 1).
    private func waitUntilTaken(_ socket: StreamSocket) throws {
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        guard case .success(let ready) = StreamSocket.poll(&descriptors, timeoutMs: 5000), ready > 0 else {
            say("Error: \(feed.printable): the recording did not answer within 5 s")
            throw ExitCode(1)
        }
        var bytes = [UInt8](repeating: 0, count: 512)
        var count = 0
        // The ready line, whole: read up to its newline.
        while count < bytes.count, !bytes[..<count].contains(UInt8(ascii: "\n")) {
            let read = bytes.withUnsafeMutableBytes { raw in
                socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: raw[count...]))
            }
            guard case .success(let got) = read, got > 0 else { break }
            count += got
        }
        let line = Self.trimmed(bytes[..<count])
        guard line.hasPrefix(FeedSource.readyLine) else {
            say("Error: \(feed.printable): " + (line.isEmpty ? "the recording closed the feed" : line.printable))
            throw ExitCode(1)
        }
    }

    /// Ends with exit status 1 when the recording has closed the feed (or said why it refuses
    /// this program), as far as `waitingMs` shows.
    private func refuseIfClosed(_ socket: StreamSocket, waitingMs: Int32) throws {
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        guard case .success(let ready) = StreamSocket.poll(&descriptors, timeoutMs: waitingMs), ready > 0 else {
            return
        }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { raw in
            if case .success(let count) = socket.receive(into: raw) { return count }
            return 0
        }
        let note = Self.trimmed(bytes[..<count])
        say("Error: \(feed.printable): " + (note.isEmpty ? "the recording closed the feed" : note.printable))
        throw ExitCode(1)
    }

    /// A socket's feed name: `gripper` for `.../gripper.sock`.
    static func feedName(_ path: String) -> String {
        let base = PathName.base(of: path)
        return base.hasSuffix(".sock") ? String(base.dropLast(".sock".count)) : base
    }

    /// A line the recording sent, as text without its surrounding whitespace.
    static func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.endIndex
        let end = bytes.lastIndex { !isSpace($0) }.map { $0 + 1 } ?? start
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }
}
