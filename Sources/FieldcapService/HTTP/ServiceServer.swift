import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import ServiceLifecycle

/// `fieldcap serve`'s server: the API's routes and the events' WebSocket on one port, run until
/// SIGTERM or SIGINT, which finish a recording in progress (every file closed, the sidecar
/// written) before the process ends.
public enum ServiceServer {
    /// Serves until a signal. `listening` gets the bound address (a port of 0 picks a free one).
    /// `scmf`, bound beforehand (so its address's error is its own), serves beside the API.
    public static func run(
        rig: RigService, host: String, port: Int, token: BearerToken?, scmf: SCMFServer? = nil, logger: Logger,
        listening: @escaping @Sendable (String, Int) -> Void
    ) async throws {
        let routes = ServiceRoutes(rig: rig, token: token)
        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        EventsSocket.add(to: webSocketRouter, rig: rig, token: token)
        let app = Application(
            router: routes.router(),
            server: .http1WebSocketUpgrade(webSocketRouter: webSocketRouter),
            configuration: .init(address: .hostname(host, port: port), serverName: "fieldcap"),
            services: [RecordingShutdown(rig: rig)] + (scmf.map { [$0] } ?? []),
            onServerRunning: { channel in
                listening(host, channel.localAddress?.port ?? port)
            },
            logger: logger)
        try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
    }
}

/// Finishes a recording in progress when the service is told to stop.
struct RecordingShutdown: Service {
    let rig: RigService

    func run() async throws {
        try? await gracefulShutdown()
        await rig.shutdown("service shutdown (SIGTERM or SIGINT)")
    }
}
