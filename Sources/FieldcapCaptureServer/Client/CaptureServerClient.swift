import FieldcapService
import FieldcapSession
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
import WSClient

/// `fieldcap serve --server ws://HOST:PORT`: a WebSocket connection to an AllSpark-style
/// capture server, kept open for the service's life. It says the rig's name (`clientInfo`),
/// takes the server's `clientConfig` as the settings of the recordings the server starts,
/// follows its commands, and answers every message, an unusable one with an error status. A
/// dropped connection is tried again every 5 s; the recording never waits for it.
public final class CaptureServerClient: Service, Sendable {
    public struct Options: Sendable {
        public var url: String
        public var name: String
        /// `wss://` without checking the server's certificate (a self-signed test server).
        public var insecure: Bool
        public var retryDelay: Duration

        public init(url: String, name: String, insecure: Bool = false, retryDelay: Duration = .seconds(5)) {
            self.url = url
            self.name = name
            self.insecure = insecure
            self.retryDelay = retryDelay
        }
    }

    let rig: RigService
    let options: Options
    let link: ServerLink
    let commands: CommandHandler
    let logger: Logger
    let notice: @Sendable (String) -> Void

    public init(rig: RigService, options: Options, logger: Logger, notice: @escaping @Sendable (String) -> Void) {
        self.rig = rig
        self.options = options
        self.logger = logger
        self.notice = notice
        link = ServerLink(url: options.url, name: options.name)
        rig.serverLink = link
        commands = CommandHandler(rig: rig, link: link, logger: logger)
    }

    /// Whether `url` is one this client can connect to, else why not.
    public static func problem(with url: String) -> String? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["ws", "wss"].contains(scheme),
            parsed.host != nil
        else { return "give the capture server as ws://HOST:PORT or wss://HOST:PORT (or auto)" }
        return nil
    }

    var secure: Bool { options.url.lowercased().hasPrefix("wss://") }

    public func run() async throws {
        await cancelWhenGracefulShutdown { [self] in
            while !Task.isCancelled {
                await connectOnce()
                if Task.isCancelled { break }
                try? await Task.sleep(for: options.retryDelay)
            }
        }
        link.update { $0.state = .disconnected }
    }

    private func connectOnce() async {
        link.update { $0.state = .connecting }
        var tls: TLSConfiguration?
        if secure {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if options.insecure { configuration.certificateVerification = .none }
            tls = configuration
        }
        let connected: ServerLink.State = secure && !options.insecure ? .connectedSecurely : .connected
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = 1 << 20
        do {
            let close = try await WebSocketClient.connect(
                url: options.url, configuration: configuration, tlsConfiguration: tls, logger: logger
            ) { [self] inbound, outbound, _ in
                let outbox = Outbox(outbound)
                link.update {
                    $0.state = connected
                    $0.connections += 1
                    $0.lastError = nil
                }
                notice("connected to the capture server \(options.url) as \(options.name)")
                try await outbox.text(ClientMessage.clientInfo(name: options.name))
                for try await message in inbound.messages(maxSize: 1 << 20) {
                    switch message {
                    case .text(let text):
                        await commands.handle(ServerMessage.parse(text), outbox: outbox)
                    case .binary(let buffer):
                        logger.warning("capture server sent a binary message (\(buffer.readableBytes) bytes)")
                        try await outbox.text(
                            ClientMessage.status(
                                success: false,
                                message: "a binary message (\(buffer.readableBytes) bytes) where JSON was expected",
                                answering: "binary"))
                    }
                }
            }
            let why = close.map { "closed by the server (\($0.closeCode))" } ?? "closed"
            link.update { $0.lastError = why }
            notice("the capture server \(options.url) \(why); trying again in \(options.retryDelay)")
        } catch {
            let why = Self.describe(error)
            let first = link.current.lastError != why
            link.update { $0.lastError = why }
            // Each failure once, not every 5 s while the server is away.
            if first { notice("capture server \(options.url): \(why); trying again every \(options.retryDelay)") }
        }
        link.update { $0.state = .disconnected }
    }
}

extension CaptureServerClient {
    /// A failed connection in a line: the system's words for an errno, the host that has no address.
    static func describe(_ error: any Error) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return describe(first.error) }
            if let lookup = error.dnsAError ?? error.dnsAAAAError { return describe(lookup) }
            return "no address to connect to"
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? SocketAddressError.UnknownHost { return "no such host \(error.host)" }
        return "\(error)"
    }
}

/// One writer for the connection: messages go out whole and in order, an upload's binary
/// message never interleaved with a status.
actor Outbox {
    let outbound: WebSocketOutboundWriter

    init(_ outbound: WebSocketOutboundWriter) { self.outbound = outbound }

    func text(_ text: String) async throws {
        try await outbound.write(.text(text))
    }
}
