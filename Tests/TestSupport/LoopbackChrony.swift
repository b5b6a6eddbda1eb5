import Foundation

/// Two real chronyd on loopback, for the tests of what fieldcap reads from chrony: a server
/// serving its own clock (`local stratum 3`) and a client following it. Both run with `-x` (they
/// never touch the system clock), in the foreground, with sockets and files in a directory of
/// their own; they are killed when this is released.
public final class LoopbackChrony {
    /// One chronyd.
    public final class Daemon {
        let process = Process()
        public let socket: String

        init(directory: String, name: String, config: String) throws {
            let home = "\(directory)/\(name)"
            try FileManager.default.createDirectory(
                atPath: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            socket = "\(home)/chronyd.sock"
            let file = "\(home)/chrony.conf"
            let paths = "cmdport 0\nbindcmdaddress \(socket)\npidfile \(home)/chronyd.pid\ndriftfile \(home)/drift\n"
            try (config + paths).write(toFile: file, atomically: true, encoding: .utf8)
            guard
                let chronyd = ["/usr/sbin/chronyd", "/sbin/chronyd"].first(where: FileManager.default.isExecutableFile)
            else { throw ExternalToolMissing(tool: "chronyd", package: "chrony") }
            process.executableURL = URL(fileURLWithPath: chronyd)
            // -u root: keep the user that can write the socket into the test's directory.
            process.arguments = ["-d", "-x", "-u", "root", "-f", file]
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            for _ in 0..<100 where !FileManager.default.fileExists(atPath: socket) { usleep(50_000) }
        }

        deinit {
            // SIGKILL: Foundation's Process starts it with the test process's signal mask, where
            // SIGTERM may be blocked.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    public let directory: String
    public private(set) var server: Daemon?
    public private(set) var client: Daemon?

    /// `withServer: false` starts only a client, of a server nobody answers for: chronyd runs
    /// and follows nothing.
    public init(withServer: Bool = true) throws {
        directory = "/tmp/fieldcap-chrony-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let port = withServer ? Int.random(in: 20_000...40_000) : 9
        if withServer {
            server = try Daemon(
                directory: directory, name: "server", config: "port \(port)\nallow 127.0.0.1\nlocal stratum 3\n")
        }
        client = try Daemon(
            directory: directory, name: "client",
            config: "server 127.0.0.1 port \(port) iburst minpoll -2 maxpoll -2\nport 0\n")
    }

    deinit {
        client = nil
        server = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The client's command socket: what `chronyc -h` and `--wall-clock chrony:` take.
    public var clientSocket: String { client!.socket }

    /// `chronyc -h SOCKET -c -n tracking`, as a user would ask it.
    public func tracking() throws -> String {
        try runTool("chronyc", ["-h", clientSocket, "-c", "-n", "tracking"], package: "chrony").output
    }

    /// Waits until the client follows the server (under a second on loopback) and its error bound
    /// (|correction| + root dispersion + root delay / 2, as fieldcap reads it) is under 0.1 s; its
    /// tracking line. Right after the first update the dispersion can still be a second on a
    /// loaded host, which is a clock settling, not what a test of a followed source asks about.
    public func waitUntilSynchronised() throws -> String {
        var line = ""
        for _ in 0..<240 {
            line = try tracking()
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { Double($0) }
            if line.hasPrefix("7F000001,") && line.contains(",Normal"), fields.count > 11,
                let correction = fields[4], let delay = fields[10], let dispersion = fields[11],
                abs(correction) + dispersion + delay / 2 < 0.1
            {
                return line
            }
            usleep(250_000)
        }
        throw NotSynchronised(line: line)
    }

    public struct NotSynchronised: Error, CustomStringConvertible {
        public var line: String
        public var description: String { "the client chronyd never followed the server: \(line)" }
    }
}
