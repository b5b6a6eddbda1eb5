import FieldcapDiscovery
import FieldcapFaces
import FieldcapNetworking
import FieldcapRig
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization
import WSClient

/// `fieldcap serve --server ws://HOST:PORT`: a WebSocket connection to an AllSpark-style
/// capture server, kept open for the service's life. It says the rig's name (`clientInfo`),
/// takes the server's `clientConfig` as the settings of the recordings the server starts,
/// follows its commands without answering them (see `CommandHandler`), announces each closed
/// segment (`chunkSaved`) and uploads what the server asks for (`UploadQueue`). A dropped
/// connection is tried again every 5 s; the recording never waits for it, and stopping the
/// service ends a connection in any state at once.
public final class CaptureServerClient: Service, Sendable {
    public struct Options: Sendable {
        /// `ws://HOST:PORT`, `wss://HOST:PORT`, or `auto`: the first `_allspark._tcp` server
        /// DNS-SD finds.
        public var url: String
        public var name: String
        /// `wss://` without checking the server's certificate (a self-signed test server).
        public var insecure: Bool
        public var retryDelay: Duration
        /// How long the TCP connection and the WebSocket handshake may take together: a peer
        /// that accepts and never answers (or answers in TLS to `ws://`) is given up after it.
        public var connectTimeout: Duration
        /// The largest message the server takes: AllSpark's reads at most 300 MiB (aiohttp's
        /// `max_msg_size=314572800`) and closes with 1009 on more.
        public var maxMessageBytes: UInt64
        /// Cover the faces in every video uploaded (nil: as recorded). A camera whose faces
        /// cannot be covered is then left out of the upload, never sent as recorded.
        public var faces: FaceCover.Settings?

        public init(
            url: String, name: String, insecure: Bool = false, retryDelay: Duration = .seconds(5),
            connectTimeout: Duration = .seconds(10), maxMessageBytes: UInt64 = 314_572_800,
            faces: FaceCover.Settings? = nil
        ) {
            self.faces = faces
            self.url = url
            self.name = name
            self.insecure = insecure
            self.retryDelay = retryDelay
            self.connectTimeout = connectTimeout
            self.maxMessageBytes = maxMessageBytes
        }
    }

    let rig: RigService
    let options: Options
    let link: ServerLink
    let commands: CommandHandler
    let chunks: ChunkAnnouncer
    /// The last connection's upload sender and chunk announcer: cancelled when it ends, and
    /// awaited before the next starts, so one upload at a time is ever in flight.
    let workers = Mutex<[Task<Void, Never>]>([])
    /// `--server auto`: the servers DNS-SD shows, in name order.
    let discovered = Mutex<[ServiceBrowser.Found]>([])
    let logger: Logger
    /// What the user is told (connected, refused, trying again): its notices are the front end's lines.
    let notices: Logger

    /// `logger` hears the protocol's details; `notices` what the user should read.
    public init(rig: RigService, options: Options, logger: Logger, notices: Logger) {
        self.rig = rig
        self.options = options
        self.logger = logger
        self.notices = notices
        link = ServerLink(url: options.url == Self.auto ? nil : options.url, name: options.name)
        rig.serverLink = link
        commands = CommandHandler(
            rig: rig, link: link, logger: logger,
            policy: UploadQueue.Policy(maxMessageBytes: options.maxMessageBytes, faces: options.faces))
        chunks = ChunkAnnouncer(rig: rig, logger: logger)
    }

    public static let auto = "auto"
    /// The DNS-SD type AllSpark servers announce, and the AllSpark app browses for.
    public static let serviceType = "_allspark._tcp"

    /// Whether `url` is one this client can connect to (`insecure`: without checking a
    /// certificate), else why not.
    public static func problem(with url: String, insecure: Bool = false) -> String? {
        if url == auto { return nil }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["ws", "wss"].contains(scheme),
            let host = parsed.host
        else { return "give the capture server as ws://HOST:PORT or wss://HOST:PORT (or auto)" }
        if scheme == "wss" && !insecure && isIPAddress(host) {
            return
                "a certificate is checked against the server's host name, not an address: "
                + "give its name (wss://NAME:PORT), or --insecure to skip the check"
        }
        return nil
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    public func run() async throws {
        var browser: ServiceBrowser?
        if options.url == Self.auto {
            browser = ServiceBrowser(
                type: Self.serviceType, logger: notices,
                changed: { [self] found in
                    discovered.withLock { $0 = found }
                    link.update { $0.seen = found.map { "\($0.name) (\(Self.url(of: $0)))" } }
                })
            do { try browser?.start() } catch {
                notices.notice(
                    """
                    --server auto: cannot browse for capture servers \
                    (\(error)); start avahi-daemon, then restart fieldcap serve
                    """
                )
            }
        }
        defer { browser?.stop() }
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                if let url = currentURL() {
                    // `auto`, as the AllSpark app: wss:// first, ws:// when no TLS handshake
                    // and WebSocket upgrade came of it.
                    if options.url == Self.auto, await connectOnce(Self.secure(url)) == .upgraded { continue }
                    if Task.isCancelled { break }
                    await connectOnce(url)
                } else {
                    link.update { $0.lastError = "no \(Self.serviceType) server found yet" }
                }
                if Task.isCancelled { break }
                try? await Task.sleep(for: options.retryDelay)
            }
        }
        link.update { $0.state = .disconnected }
    }

    /// The URL to try: the one given, or the first server DNS-SD shows.
    private func currentURL() -> String? {
        guard options.url == Self.auto else { return options.url }
        guard let first = discovered.withLock({ $0.first }) else { return nil }
        let url = Self.url(of: first)
        link.update { $0.url = url }
        return url
    }

    /// A found server's WebSocket URL: the AllSpark app connects to the root path.
    static func url(of server: ServiceBrowser.Found) -> String {
        "ws://\(server.address.contains(":") ? "[\(server.address)]" : server.address):\(server.port)"
    }

    /// `ws://` made `wss://`.
    static func secure(_ url: String) -> String {
        url.lowercased().hasPrefix("ws://") ? "wss://" + url.dropFirst(5) : url
    }

    enum Attempt: Equatable {
        /// The WebSocket was opened (and has since ended).
        case upgraded
        case failed
    }

    /// One connection, from TCP connect to its end. Its socket lives on an event loop of its own:
    /// the WebSocket client's connect and upgrade wait on futures that task cancellation does
    /// not reach, so a timeout or the service's shutdown ends the attempt by shutting that loop
    /// down, which closes the socket wherever it is (connecting, upgrading, mid-upload).
    @discardableResult
    private func connectOnce(_ url: String) async -> Attempt {
        for worker in workers.withLock({ $0 }) { await worker.value }
        let loop = AttemptLoop()
        defer { loop.close() }
        let watchdog = Task { [timeout = options.connectTimeout] in
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled && !loop.upgraded { loop.close(timedOut: true) }
        }
        defer { watchdog.cancel() }
        return await withTaskCancellationHandler {
            await connectOnce(url, loop: loop)
        } onCancel: {
            loop.close()
        }
    }

    private func connectOnce(_ url: String, loop: AttemptLoop) async -> Attempt {
        let secure = url.lowercased().hasPrefix("wss://")
        link.update {
            $0.state = .connecting
            if options.url == Self.auto { $0.url = url }
        }
        var tls: TLSConfiguration?
        if secure {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if options.insecure { configuration.certificateVerification = .none }
            tls = configuration
        }
        let connected: ServerLink.State = secure && !options.insecure ? .connectedSecurely : .connected
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = 1 << 20
        if secure, options.insecure, let host = URL(string: url)?.host, Self.isIPAddress(host) {
            // The TLS client sends the URL's host as SNI, which may not be an IP address. Unchecked,
            // the name sent matters to no one: a placeholder that can name nothing.
            configuration.sniHostname = "fieldcap.invalid"
        }
        do {
            let close = try await WebSocketClient.connect(
                url: url, configuration: configuration, tlsConfiguration: tls, eventLoopGroup: loop.group,
                logger: logger
            ) { [self] inbound, outbound, _ in
                loop.upgraded = true
                let outbox = Outbox(outbound)
                link.update {
                    $0.state = connected
                    $0.connections += 1
                    $0.lastError = nil
                }
                notices.notice("connected to the capture server \(url) as \(options.name)")
                try await outbox.text(ClientMessage.clientInfo(name: options.name))
                let uploads = Task { [commands, logger] in
                    do {
                        try await commands.uploads.run(outbox: outbox)
                    } catch is CancellationError {
                    } catch {
                        logger.warning("capture server: closing the connection to start clean: \(error)")
                        try? await outbox.closeConnection()
                    }
                }
                let announcer = Task { [chunks] in await chunks.run(outbox: outbox) }
                workers.withLock { $0 = [uploads, announcer] }
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    switch message {
                    case .text(let text):
                        await commands.handle(ServerMessage.parse(text))
                    case .binary(let buffer):
                        await commands.handle(
                            .unusable("a binary message (\(buffer.readableBytes) bytes) where JSON was expected"))
                    }
                }
            }
            let tooLarge = close?.closeCode == .messageTooLarge
            let why = close.map { "closed by the server (\($0.closeCode))" } ?? "closed"
            endWorkers(tooLarge: tooLarge, why: why)
            link.update { $0.lastError = why }
            notices.notice("the capture server \(url) \(why); trying again in \(options.retryDelay)")
        } catch {
            let why =
                loop.timedOut
                ? "no WebSocket handshake within \(options.connectTimeout): the server "
                    + "does not answer\(secure ? "" : ", or speaks TLS (give wss://)")"
                : Task.isCancelled ? "stopped" : Self.describe(error)
            endWorkers(tooLarge: false, why: why)
            let first = link.current.lastError != why
            link.update { $0.lastError = why }
            // Each failure once, not every 5 s while the server is away.
            if first { notices.notice("capture server \(url): \(why); trying again every \(options.retryDelay)") }
        }
        link.update { $0.state = .disconnected }
        return loop.upgraded ? .upgraded : .failed
    }
}

extension CaptureServerClient {
    /// The connection ended: the upload in flight has its outcome, and its workers stop.
    func endWorkers(tooLarge: Bool, why: String) {
        commands.uploads.replies.connectionEnded(tooLarge: tooLarge, why: why)
        for worker in workers.withLock({ $0 }) { worker.cancel() }
    }
}

/// The event loop of one connection attempt, shut down (closing its socket) once: at its end,
/// on a timeout, or when the service stops.
final class AttemptLoop: Sendable {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let state = Mutex((closed: false, timedOut: false, upgraded: false))

    var upgraded: Bool {
        get { state.withLock { $0.upgraded } }
        set { state.withLock { $0.upgraded = newValue } }
    }
    var timedOut: Bool { state.withLock { $0.timedOut } }

    func close(timedOut: Bool = false) {
        let first = state.withLock { state in
            if timedOut { state.timedOut = true }
            defer { state.closed = true }
            return !state.closed
        }
        if first { group.shutdownGracefully { _ in } }
    }
}

extension CaptureServerClient {
    /// A failed connection in a line: the system's words for an errno, the host that has no address.
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOSSLError, case .handshakeFailed(let reason) = error {
            let untrusted = "\(reason)".contains("CERTIFICATE_VERIFY_FAILED")
            return untrusted
                ? "TLS: the server's certificate is not trusted (\(reason)); a self-signed test server needs --insecure"
                : "TLS handshake failed: \(reason)"
        }
        return ConnectionFailure.describe(error)
    }
}

/// One writer for the connection: messages go out whole and in order, an upload's binary
/// message never interleaved with a status (WebSocket data frames of two messages cannot mix;
/// an actor alone would let them, across its awaits).
actor Outbox {
    let outbound: WebSocketOutboundWriter
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ outbound: WebSocketOutboundWriter) { self.outbound = outbound }

    private func acquire() async {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
    }

    private func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    func text(_ text: String) async throws {
        await acquire()
        defer { release() }
        try await outbound.write(.text(text))
    }

    func closeConnection() async throws {
        try await outbound.close(.goingAway, reason: "no answer to an upload")
    }

    /// The two-phase upload: the metadata message, then the file as one binary message, sent in
    /// 1 MiB fragments read on NIO's blocking-I/O pool, so a long range never sits in memory.
    func upload(metadata: String, file: String, size: UInt64) async throws {
        await acquire()
        defer { release() }
        try await outbound.write(.text(metadata))
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw RangeUpload.Failure(description: "open \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        try await outbound.withBinaryMessageWriter { writer in
            var offset: UInt64 = 0
            while offset < size {
                let want = Int(Swift.min(UInt64(1 << 20), size - offset))
                let at = offset
                let chunk: ByteBuffer = try await NIOThreadPool.singleton.runIfActive {
                    var buffer = ByteBuffer()
                    let got = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) {
                        bytes in
                        Swift.max(0, SystemCall.retryingInterrupts { pread(fd, bytes.baseAddress, want, off_t(at)) })
                    }
                    guard got == want else {
                        throw RangeUpload.Failure(description: "\(file) is shorter than its \(size) bytes")
                    }
                    return buffer
                }
                try await writer(chunk)
                offset += UInt64(want)
            }
        }
    }
}
