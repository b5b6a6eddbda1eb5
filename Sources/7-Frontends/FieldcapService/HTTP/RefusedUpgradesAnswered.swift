import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// hummingbird-websocket answers every WebSocket upgrade the router declines with an empty 400,
/// whatever the router said, so a client without the token (or a page from another site) could
/// not tell its refusal from a malformed request (#42). A WebSocket request the API's checks
/// would refuse is therefore never offered for upgrade: its `Upgrade` header is taken out before
/// the upgrade negotiation sees it, and it reaches the API's router as the plain GET it then is,
/// which answers it as it answers every other request: 401 or 403, the reason in JSON.
struct RefusedUpgradesAnswered<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    /// Whether a request would pass the API's checks (the token, or the loopback guard).
    let admits: @Sendable (HTTPRequestHead) -> Bool

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try operations.addHandler(Handler(admits: admits), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }

    /// Event-loop bound: sees the connection's first request head, then leaves the pipeline
    /// (only a connection's first request can be upgraded, and an upgraded one carries frames).
    final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart

        let admits: @Sendable (HTTPRequestHead) -> Bool

        init(admits: @escaping @Sendable (HTTPRequestHead) -> Bool) { self.admits = admits }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(var head) = unwrapInboundIn(data) else {
                context.fireChannelRead(data)
                return
            }
            if head.headers.contains(name: "upgrade") && !admits(head) {
                head.headers.remove(name: "upgrade")
                head.headers.replaceOrAdd(name: "connection", value: "close")
                context.fireChannelRead(wrapInboundOut(.head(head)))
            } else {
                context.fireChannelRead(data)
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
