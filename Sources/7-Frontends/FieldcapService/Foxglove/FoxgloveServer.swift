import FieldcapRig
import FoundationEssentials
import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SyncField
import Synchronization

/// `fieldcap serve --foxglove ADDR:PORT`: the rig live in Foxglove (its "Foxglove WebSocket"
/// connection), on a port of its own. With a token, a client gives it as the API takes it
/// (`Authorization: Bearer`, or `?token=` in the URL Foxglove opens); without one the server is
/// on loopback and, as the API, answers only to a loopback `Host`, and to pages of its own
/// origin or Foxglove's web app (`https://app.foxglove.dev`): any other site open in the rig's
/// browser could otherwise watch its cameras.
public struct FoxgloveServer: Sendable {
    /// Clients served at once; the next is refused until one leaves.
    public static let maxClients = 16
    /// TCP connections at once, upgraded or not: the next wait in the listen backlog.
    public static let maxConnections = 32
    public static let defaultPort = 8765
    /// The origins of web pages allowed without a token, besides the rig's own.
    static let webApps: Set<String> = ["https://app.foxglove.dev"]

    let rig: RigService
    let token: BearerToken?
    let maxSensorRate: Double?
    let catalog: FoxgloveCatalog
    let clock = LiveUTCClock()
    /// A new value at each start of the process: a client tells a reconnection from a new rig.
    let sessionId = String(MonotonicClock.now())
    private let clients = ClientCount()

    /// `maxSensorRate`: messages a second each sensor channel sends at most (nil: every sample).
    public init(rig: RigService, token: BearerToken?, maxSensorRate: Double? = nil) {
        self.rig = rig
        self.token = token
        self.maxSensorRate = maxSensorRate
        catalog = FoxgloveCatalog(previews: rig.previews, sensors: rig.live.streams)
    }

    /// The channels advertised to each client.
    public var channelCount: Int { catalog.channels.count }

    final class ClientCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Binds `host:port` and lets it go: an address in use or not this machine's throws NIO's
    /// error before the service starts.
    public static func probe(host: String, port: Int) async throws {
        let probe = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port).get()
        try await probe.close()
    }

    /// The server, to run beside the API (`ServiceServer.run`'s `foxglove`); `listening` gets
    /// the bound port.
    public func service(
        host: String, port: Int, logger: Logger, listening: @escaping @Sendable (String, Int) -> Void
    ) -> FoxgloveService {
        FoxgloveService(application: application(host: host, port: port, logger: logger, listening: listening))
    }

    func application(
        host: String, port: Int, logger: Logger, listening: @escaping @Sendable (String, Int) -> Void
    ) -> some Service {
        let router = Router()
        router.get("/") { _, _ -> Response in
            Response(
                status: .upgradeRequired, headers: [.contentType: "text/plain; charset=utf-8"],
                body: ResponseBody(
                    byteBuffer: ByteBuffer(
                        string: "This is fieldcap's Foxglove WebSocket (\(FoxgloveProtocol.subprotocol)): "
                            + "open it in Foxglove, Open connection, Foxglove WebSocket, ws://HOST:PORT\n")))
        }
        let server = self
        // A client's frames are its subscriptions, a few hundred bytes; the messages sent are
        // single frames whatever their size.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(idleTimeout: .seconds(15)), ws: .init(maxFrameSize: FoxgloveConnection.maxClientMessage))
        let shouldUpgrade:
            @Sendable (HTTPRequest, any Channel, Logger) throws -> ShouldUpgradeResult<
                WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>
            > = { request, channel, _ in
                guard server.admits(request) else { return .dontUpgrade }
                return .upgrade([.secWebSocketProtocol: FoxgloveProtocol.subprotocol]) { inbound, outbound, _ in
                    guard server.clients.value.add(1, ordering: .relaxed).newValue <= Self.maxClients else {
                        server.clients.value.subtract(1, ordering: .relaxed)
                        try await outbound.write(
                            .text(
                                FoxgloveProtocol.status(
                                    .error,
                                    "fieldcap serves \(Self.maxClients) Foxglove clients at once: try again later")))
                        return
                    }
                    defer { server.clients.value.subtract(1, ordering: .relaxed) }
                    try await FoxgloveConnection(
                        rig: server.rig, catalog: server.catalog, clock: server.clock, sessionId: server.sessionId,
                        maxSensorRate: server.maxSensorRate
                    ).serve(inbound: inbound, outbound: outbound) {
                        // A stalled client's socket, reset at once (SO_LINGER 0): no close
                        // handshake, and no megabytes it never read left queued in the kernel.
                        if let socket = channel as? SocketOptionProvider {
                            socket.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                                .whenComplete { _ in channel.close(promise: nil) }
                        } else {
                            channel.close(promise: nil)
                        }
                    }
                }
            }
        return Application(
            router: router,
            // As the API's: a connection that sends no request head within the idle time is
            // closed (Hummingbird's idle timeout starts only after one), and connections past
            // `maxConnections` wait in the listen backlog, holding none of the rig's descriptors.
            server: HTTPServerBuilder { responder in
                FirstRequestDeadline(
                    inner: HTTP1WebSocketUpgradeChannel(
                        responder: responder, configuration: configuration, shouldUpgrade: shouldUpgrade),
                    timeout: .seconds(15))
            },
            configuration: .init(
                address: .hostname(host, port: port), serverName: "fieldcap-foxglove",
                availableConnectionsDelegate: MaximumAvailableConnections(Self.maxConnections)),
            onServerRunning: { channel in listening(host, channel.localAddress?.port ?? port) },
            logger: logger)
    }

    /// Whether an upgrade request may connect: it asks for the protocol's subprotocol, and
    /// carries the token or (without one) comes as a loopback client would.
    func admits(_ request: HTTPRequest) -> Bool {
        let offered = request.headerFields[values: .secWebSocketProtocol]
            .flatMap { $0.split(separator: ",") }.map { String($0.filter { !$0.isWhitespace }) }
        guard offered.contains(FoxgloveProtocol.subprotocol) else { return false }
        if let token { return token.accepts(request) }
        let loopback = LoopbackGuard<BasicRequestContext>()
        // HTTP/1's first Host becomes the request's authority; a second one stays a header.
        guard let host = request.authority, !request.headerFields.contains(where: { $0.name.canonicalName == "host" }),
            loopback.allows(authority: host)
        else { return false }
        guard let origin = request.headerFields[.origin] else { return true }
        return Self.webApps.contains(origin.lowercased()) || loopback.sameOrigin(origin, host: host)
    }
}

/// `FoxgloveServer`'s listener, a service of the API's group.
public struct FoxgloveService: Service {
    let application: any Service

    public func run() async throws { try await application.run() }
}
