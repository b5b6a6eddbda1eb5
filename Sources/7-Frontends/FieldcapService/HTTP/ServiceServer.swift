import FieldcapDiscovery
import FieldcapRig
import FieldcapSession
import Glibc
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization

/// `fieldcap serve`'s server: the API's routes and the events' WebSocket on one port, run until
/// SIGTERM or SIGINT, which finish a recording in progress (every file closed, the sidecar
/// written) first, before any client or listener is asked to stop: no peer, however stuck,
/// keeps the recording going.
public enum ServiceServer {
    /// What one client may hold of the rig: descriptors are shared with the recording, which opens
    /// files at each segment rotation, so connections that send nothing, or too many of them,
    /// must not take the ones it needs.
    public struct Limits: Sendable {
        /// A connection with no request in progress is closed after this long: one that sends
        /// nothing, half a request line, garbage or a request NIO's parser refuses (`HTTP/9.9`,
        /// a 100 kB URL) is answered or dropped, then closed.
        public var idleTimeout: Duration
        /// Connections served at once; the next wait in the listen backlog (not accepted: they
        /// hold no descriptor of ours) until one closes.
        public var maxConnections: Int

        public init(idleTimeout: Duration = .seconds(15), maxConnections: Int = Limits.defaultMaxConnections()) {
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
        }

        /// A quarter of the descriptor limit (`RLIMIT_NOFILE`'s soft value), at most 512: the
        /// rest is the recording's (devices, each segment's videos, timestamps, frame logs),
        /// the previews' and the fleet's. 256 under the usual 1,024; 512 under the units'
        /// `LimitNOFILE=65536`.
        public static func defaultMaxConnections() -> Int {
            var limit = rlimit()
            guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
                return 512
            }
            return max(8, Int(min(512, limit.rlim_cur / 4)))
        }
    }

    /// Serves until a signal. `listening` gets the bound address (a port of 0 picks a free one).
    /// `scmf`, bound beforehand (so its address's error is its own), and `foxglove` serve beside the API;
    /// `services` (a capture server's connection) run beside it and end with it.
    /// With `announce`, the service is announced with DNS-SD once it listens (`announcement`),
    /// and `notices` (a logger whose notices are the user's lines) hears what the announcer has
    /// to say. `recordingFinished` is called once the signal's recording is finished, with how it
    /// ended (nil: there was none), before the rest is stopped; what is still running
    /// `stopTimeout` later is cancelled.
    public static func run(
        rig: RigService, host: String, port: Int, token: BearerToken?, scmf: SCMFServer? = nil,
        services: [any Service] = [], foxglove: FoxgloveService? = nil, announce: Bool = false,
        limits: Limits = Limits(),
        stopTimeout: Duration = .seconds(3),
        logger: Logger, notices: Logger = .silent(label: "fieldcap.service"),
        recordingFinished: @escaping @Sendable (StoppedEvent?) -> Void = { _ in },
        listening: @escaping @Sendable (String, Int) -> Void
    ) async throws {
        let announcer = Mutex<ServiceAnnouncer?>(nil)
        defer { announcer.withLock { $0?.stop() } }
        let routes = ServiceRoutes(rig: rig, token: token)
        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        EventsSocket.add(to: webSocketRouter, rig: rig, token: token)
        LiveSamplesSocket.add(to: webSocketRouter, rig: rig)
        let webSocketResponder = webSocketRouter.buildResponder()
        let loopbackGuard = LoopbackGuard<BasicRequestContext>()
        let admits: @Sendable (HTTPRequestHead) -> Bool = { head in
            token.map { $0.admits(head) } ?? loopbackGuard.admits(head)
        }
        let app = Application(
            router: routes.router(),
            server: HTTPServerBuilder { responder in
                FirstRequestDeadline(
                    inner: RefusedUpgradesAnswered(
                        inner: HTTP1WebSocketUpgradeChannel(
                            responder: responder, webSocketResponder: webSocketResponder,
                            configuration: .init(http1: .init(idleTimeout: TimeAmount(limits.idleTimeout)))),
                        admits: admits),
                    timeout: TimeAmount(limits.idleTimeout))
            },
            configuration: .init(
                address: .hostname(host, port: port), serverName: "fieldcap",
                availableConnectionsDelegate: MaximumAvailableConnections(limits.maxConnections)),
            services: (scmf.map { [$0] } ?? []) + (foxglove.map { [$0] } ?? []) + services,
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                listening(host, bound)
                guard announce else { return }
                let started = ServiceAnnouncer(
                    announcement(rig: rig, port: bound, tokenRequired: token != nil),
                    logger: notices)
                do { try started.start() } catch {
                    notices.notice(
                        """
                        the rig is not announced on the network (\(error)): start avahi-daemon \
                        (Debian: apt install avahi-daemon), then restart fieldcap serve
                        """
                    )
                }
                announcer.withLock { $0 = started }
            },
            logger: logger)
        // A group shuts its services down in reverse order, each after the one before has
        // ended: the recording is last in the list, so it is finished first, and a client that
        // never ends (a capture server that does not answer, an HTTP client that does not read)
        // can only hold up the rest, which is cancelled after `stopTimeout`.
        var configuration = ServiceGroupConfiguration(
            services: [app, RecordingShutdown(rig: rig, finished: recordingFinished)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = stopTimeout
        try await ServiceGroup(configuration: configuration).run()
    }
}

extension ServiceServer {
    /// Whether `--listen`'s host is loopback, where the service needs no token: `localhost`,
    /// `::1`, or an address of `127.0.0.0/8`.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || LoopbackGuard<BasicRequestContext>.isLoopbackIPv4(host)
    }

    /// What the rig announces: `fieldcap HOSTID`, type `_fieldcap._tcp`, and TXT records with
    /// its host id, the API's version, whether a token is needed, and the page's path.
    public static func announcement(rig: RigService, port: Int, tokenRequired: Bool) -> ServiceAnnouncer.Announcement {
        ServiceAnnouncer.Announcement(
            name: "fieldcap \(rig.settings.hostId)", type: "_fieldcap._tcp", port: port,
            txt: [
                ("host_id", rig.settings.hostId), ("api", "v1"), ("token", tokenRequired ? "required" : "none"),
                ("path", "/"),
            ])
    }
}

/// Finishes a recording in progress when the service is told to stop.
struct RecordingShutdown: Service {
    let rig: RigService
    let finished: @Sendable (StoppedEvent?) -> Void

    func run() async throws {
        try? await gracefulShutdown()
        finished(await rig.shutdown("service shutdown (SIGTERM or SIGINT)"))
    }
}
