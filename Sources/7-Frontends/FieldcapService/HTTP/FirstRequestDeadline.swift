import HummingbirdCore
import Logging
import NIOCore

/// A connection gets `timeout` to send a request the server can take up. Hummingbird's idle
/// timeout (`HTTPConnectionStateHandler`) only joins a connection once hummingbird-websocket's
/// upgrade negotiation has read a whole, valid request head; before that nothing closes it, so a
/// client that sends nothing, half a request line, garbage, a 100 kB URL or `HTTP/9.9` held a
/// descriptor for ever. This child channel puts a deadline in front: when it passes and the
/// connection has neither been answered nor been taken up by Hummingbird (a request being
/// handled, a WebSocket), it is closed. After that Hummingbird's own idle timeout governs.
struct FirstRequestDeadline<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let timeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(Handler(timeout: timeout), position: .first)
        }.flatMap { inner.setup(channel: channel, logger: logger) }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }

    /// Event-loop bound: first in the pipeline, it sees the raw bytes each way.
    final class Handler: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias OutboundIn = IOData

        let timeout: TimeAmount
        var answered = false
        var deadline: Scheduled<Void>?

        init(timeout: TimeAmount) { self.timeout = timeout }

        func handlerAdded(context: ChannelHandlerContext) {
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            deadline = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: timeout) {
                let (handler, context) = loopBound.value
                handler.deadlinePassed(context: context)
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            deadline?.cancel()
            deadline = nil
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            answered = true
            context.write(data, promise: promise)
        }

        private func deadlinePassed(context: ChannelHandlerContext) {
            deadline = nil
            // Taken up: a response went out (the 101 of a WebSocket too), or Hummingbird handles a
            // request (a slow extract) with its idle timeout in place.
            let handled = (try? context.pipeline.syncOperations.handler(type: HTTPConnectionStateHandler.self)) != nil
            if answered || handled {
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            } else {
                context.close(promise: nil)
            }
        }
    }
}
