import Hummingbird
import NIOCore

/// The API's request context: Hummingbird's, plus the connection, so a response that streams
/// until the client leaves (the MJPEG preview) sees it leave. Hummingbird does not cancel a
/// handler when its client disconnects.
public struct ServiceRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
