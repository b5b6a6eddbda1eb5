import Foundation

/// A real mosquitto broker on loopback for the tests, on a port of its own, with its own
/// configuration: anonymous, or with a password file, and with TLS from a CA the test makes with
/// openssl. Killed when released; `restart` stops it and starts it again on the same port.
public final class MosquittoBroker {
    public struct Login {
        public var username: String
        public var password: String
        public init(username: String, password: String) { (self.username, self.password) = (username, password) }
    }

    public let directory: String
    public private(set) var port: Int
    public let login: Login?
    public let tls: Bool
    /// TLS brokers only: clients must show a certificate the CA signed (`require_certificate`).
    public let clientCertificates: Bool
    /// The CA that signed the broker's certificate (TLS only).
    public var caFile: String { "\(directory)/ca.crt" }
    private var process: Process?

    /// A client certificate and its key signed by the CA (`clientCertificates`).
    public var clientCertFile: String { "\(directory)/client.crt" }
    public var clientKeyFile: String { "\(directory)/client.key" }

    public init(login: Login? = nil, tls: Bool = false, clientCertificates: Bool = false) throws {
        directory = "/tmp/fieldcap-mosquitto-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        port = Self.randomPort()
        self.login = login
        self.tls = tls
        self.clientCertificates = clientCertificates
        var config = "persistence false\nlog_dest stderr\n"
        if let login {
            let passwords = "\(directory)/passwords"
            FileManager.default.createFile(atPath: passwords, contents: nil)
            let made = try runTool(
                "mosquitto_passwd", ["-b", passwords, login.username, login.password], package: "mosquitto")
            guard made.status == 0 else { throw BrokerFailed(message: "mosquitto_passwd: \(made.output)") }
            config += "allow_anonymous false\npassword_file \(passwords)\n"
        } else {
            config += "allow_anonymous true\n"
        }
        if tls {
            try makeCertificates()
            config += "cafile \(caFile)\ncertfile \(directory)/broker.crt\nkeyfile \(directory)/broker.key\n"
            if clientCertificates { config += "require_certificate true\n" }
        }
        self.config = config
        // A port another process holds makes mosquitto exit at once: another port, twice more.
        for attempt in 1...3 {
            do {
                try start()
                return
            } catch let failure as BrokerFailed where failure.portTaken && attempt < 3 {
                port = Self.randomPort()
            }
        }
    }

    private var config = ""

    /// Below Linux's ephemeral range (32768 and up), where the system's own outgoing
    /// connections take their ports.
    private static func randomPort() -> Int { Int.random(in: 20_000...32_000) }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `mqtt://127.0.0.1:PORT`, or `mqtts://`, with the login when there is one.
    public var url: String {
        let login = self.login.map { "\($0.username):\($0.password)@" } ?? ""
        return "\(tls ? "mqtts" : "mqtt")://\(login)127.0.0.1:\(port)"
    }

    public func start() throws {
        try ("listener \(port) 127.0.0.1\n" + config).write(
            toFile: "\(directory)/mosquitto.conf", atomically: true, encoding: .utf8)
        let process = Process()
        guard
            let mosquitto = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"].first(
                where: FileManager.default.isExecutableFile)
        else { throw ExternalToolMissing(tool: "mosquitto", package: "mosquitto") }
        process.executableURL = URL(fileURLWithPath: mosquitto)
        process.arguments = ["-c", "\(directory)/mosquitto.conf"]
        let log = FileHandle(forWritingAtPath: "/dev/null")
        process.standardOutput = log
        process.standardError = log
        try process.run()
        self.process = process
        // Listening when its own socket listens on the port (a connection accepted is not
        // enough: another test's server on the port would accept it, while mosquitto, finding
        // the port taken, exits; a TLS client then fails its handshake with that server). A busy
        // machine (six test processes and a build) can take seconds to start it.
        for _ in 0..<300 {
            if Self.listens(pid: process.processIdentifier, port: port) { return }
            if !process.isRunning {
                self.process = nil
                throw BrokerFailed(
                    message: "mosquitto exited at start on 127.0.0.1:\(port) (status \(process.terminationStatus))",
                    portTaken: true)
            }
            usleep(50_000)
        }
        throw BrokerFailed(message: "mosquitto did not listen on 127.0.0.1:\(port) within 15 s")
    }

    /// Kills it (SIGKILL: as a broker host that dies; Foundation's Process starts it with the
    /// test process's signal mask, where SIGTERM may be blocked).
    public func stop() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    public func restart() throws {
        stop()
        try start()
    }

    /// What a subscriber sees first on `topic` (a retained message at once), with mosquitto_sub:
    /// nil if nothing comes within `seconds`.
    public func firstMessage(on topic: String, seconds: Int = 10) throws -> String? {
        var arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-C", "1", "-W", "\(seconds)"]
        arguments += clientArguments
        let result = try runTool("mosquitto_sub", arguments, package: "mosquitto-clients")
        guard result.status == 0 else { return nil }
        return result.output.hasSuffix("\n") ? String(result.output.dropLast()) : result.output
    }

    /// Publishes with mosquitto_pub (QoS 1).
    public func publish(_ text: String, on topic: String, retain: Bool = false) throws {
        var arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-m", text, "-q", "1"] + clientArguments
        if retain { arguments.append("-r") }
        let result = try runTool("mosquitto_pub", arguments, package: "mosquitto-clients")
        guard result.status == 0 else { throw BrokerFailed(message: "mosquitto_pub: \(result.output)") }
    }

    private var clientArguments: [String] {
        var arguments: [String] = []
        if let login { arguments += ["-u", login.username, "-P", login.password] }
        if tls { arguments += ["--cafile", caFile, "--insecure"] }
        if clientCertificates { arguments += ["--cert", clientCertFile, "--key", clientKeyFile] }
        return arguments
    }

    /// A CA and a broker certificate for 127.0.0.1 signed by it, with openssl. The broker's key is
    /// made readable to all: mosquitto started as root drops to the user `mosquitto` before it
    /// reads it.
    private func makeCertificates() throws {
        let d = directory
        for arguments in [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fieldcap test CA",
                "-keyout", "\(d)/ca.key", "-out", "\(d)/ca.crt",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "\(d)/broker.key",
                "-out", "\(d)/broker.csr",
            ],
            [
                "x509", "-req", "-in", "\(d)/broker.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                "-CAcreateserial",
                "-days", "2", "-out", "\(d)/broker.crt",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=rig", "-keyout", "\(d)/client.key",
                "-out", "\(d)/client.csr",
            ],
            [
                "x509", "-req", "-in", "\(d)/client.csr", "-CA", "\(d)/ca.crt", "-CAkey", "\(d)/ca.key",
                "-CAcreateserial", "-days", "2", "-out", "\(d)/client.crt",
            ],
        ] {
            let result = try runTool("openssl", arguments, package: "openssl")
            guard result.status == 0 else { throw BrokerFailed(message: "openssl \(arguments[0]): \(result.output)") }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: "\(d)/broker.key")
    }

    /// Whether process `pid` holds the socket listening on 127.0.0.1:`port` (/proc/net/tcp's
    /// LISTEN line for the port, its inode among the process's descriptors).
    static func listens(pid: Int32, port: Int) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8) else {
            return accepts(port: port)
        }
        let local = String(format: "0100007F:%04X", port)
        let inodes = table.split(separator: "\n").dropFirst().compactMap { line -> String? in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 9, fields[1] == local, fields[3] == "0A" else { return nil }
            return String(fields[9])
        }
        guard !inodes.isEmpty,
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        else { return false }
        return descriptors.contains { descriptor in
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)")
            return inodes.contains { target == "socket:[\($0)]" }
        }
    }

    static func accepts(port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    public struct BrokerFailed: Error, CustomStringConvertible {
        public var message: String
        /// mosquitto exited at once, as it does when its port is taken.
        public var portTaken = false
        public var description: String { message }
    }
}
