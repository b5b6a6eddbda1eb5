import ArgumentParser
import FieldcapCore
import FieldcapFeeds
import FieldcapSystem
import Foundation
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
              fieldcap feed /run/fieldcap/feeds/gripper.sock < replay.jsonl

            Exit status: 0 once standard input ended and every line was sent, 1 when the \
            recording closed the feed first (another program feeds it; the recording stopped), \
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
        let path =
            feed.contains("/")
            ? feed : FeedSocket.path(name: feed, given: nil, environment: ProcessInfo.processInfo.environment)
        let socket = try connect(path)
        defer { socket.close() }
        // The recording writes to a feeder only to refuse it, just after it connects; a moment's
        // wait sees that before a line is lost to it.
        try refuseIfClosed(socket, waitingMs: 200)
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
    private func connect(_ path: String) throws -> LocalSocket {
        let deadline = MonotonicClock.now() + UInt64(wait * 1e9)
        while true {
            switch LocalSocket.connect(to: path) {
            case .success(let socket): return socket
            case .failure(let error):
                if MonotonicClock.now() < deadline {
                    usleep(100_000)
                    continue
                }
                say(
                    "Error: \(path.printable): cannot connect (\(error)); is a recording with --sensor "
                        + "feed:\(PathName.base(of: path).replacingOccurrences(of: ".sock", with: "")) running? "
                        + "(--wait SECONDS waits for it)")
                throw ExitCode(69)
            }
        }
    }

    /// Ends with exit status 1 when the recording has closed the feed (or said why it refuses
    /// this program), as far as `waitingMs` shows.
    private func refuseIfClosed(_ socket: LocalSocket, waitingMs: Int32) throws {
        var descriptors = [pollfd(fd: socket.descriptor, events: Int16(POLLIN), revents: 0)]
        guard case .success(let ready) = LocalSocket.poll(&descriptors, timeoutMs: waitingMs), ready > 0 else { return }
        var bytes = [UInt8](repeating: 0, count: 512)
        let count = bytes.withUnsafeMutableBytes { raw in
            if case .success(let count) = socket.receive(into: raw) { return count }
            return 0
        }
        let note = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        say("Error: \(feed.printable): " + (note.isEmpty ? "the recording closed the feed" : note.printable))
        throw ExitCode(1)
    }
}
