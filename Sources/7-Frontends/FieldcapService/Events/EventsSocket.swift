import FieldcapRig
import Hummingbird
import HummingbirdWebSocket

/// `GET /api/v1/events`: a WebSocket that sends the status once a second and every other event
/// as it happens, one JSON object per text message, until the client closes it.
enum EventsSocket {
    static func add(to router: Router<BasicWebSocketRequestContext>, rig: RigService, token: BearerToken?) {
        router.add(middleware: RequireToken<BasicWebSocketRequestContext>(token: token))
        if token == nil { router.add(middleware: LoopbackGuard<BasicWebSocketRequestContext>()) }
        router.ws("/api/v1/events") { inbound, outbound, _ in
            let events = rig.events.watch()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Reading is how a close is noticed; what a client sends is ignored.
                group.addTask { for try await _ in inbound {} }
                group.addTask {
                    for await event in events {
                        try await outbound.write(.text(text(event)))
                    }
                }
                group.addTask {
                    while !Task.isCancelled {
                        try await outbound.write(.text(text(.status(rig.status))))
                        try await Task.sleep(for: .seconds(1))
                    }
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    static func text(_ event: RigEvent) -> String {
        String(decoding: JSONBody.encode(EventBody(event: event)), as: UTF8.self)
    }
}
