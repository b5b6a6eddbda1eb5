import FoundationEssentials
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// One HTTP/1.1 request whose body streams from an async sequence, and its answer: SwiftNIO's
/// HTTP/1 codec over a NIO socket, NIOSSL for `https`. This is all an upload asks of an HTTP
/// client; AsyncHTTPClient did it before, and brought HTTP/2, SOCKS, compression, tracing and
/// swift-configuration with it, 4.4 MB of the rig binary for one POST (#25).
///
/// The body is written as the connection takes it (NIO's back-pressure): a file read a chunk at
/// a time never sits in memory whole. An answer that comes before the body is all sent (a
/// service refusing the upload early) is the answer.
public struct HTTPRequestSender: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var reason: String
        public var body: ByteBuffer
    }

    /// Why a request got no answer, in a user's words.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case badURL(String)
        case noConnection(String)
        case closedEarly
        case stoppedAnswering

        /// What went wrong with an open connection: closed, reset, or TLS refused.
        init(connectionError error: any Error) {
            switch error {
            case let error as ChannelError where error == .eof || error == .ioOnClosedChannel: self = .closedEarly
            case let error as NIOSSLError: self = .noConnection("TLS failed: \(error)")
            case let error as BoringSSLError: self = .noConnection("TLS failed: \(error)")
            default: self = .noConnection(ConnectionFailure.describe(error))
            }
        }

        public var description: String {
            switch self {
            case .badURL(let url): "\(url) is not an http:// or https:// URL with a host"
            case .noConnection(let why): why
            case .closedEarly: "the service closed the connection"
            case .stoppedAnswering: "the service stopped answering"
            }
        }
    }

    /// Where a request goes: scheme, host, port and the request target.
    public struct Endpoint: Sendable, Equatable {
        public var secure: Bool
        public var host: String
        public var port: Int
        /// The path and query, `/api/v1/sync/upload`.
        public var target: String

        public init(url: String) throws(Failure) {
            guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                let host = parsed.host(percentEncoded: false), !host.isEmpty
            else { throw .badURL(url) }
            secure = scheme == "https"
            self.host = host
            port = parsed.port ?? (secure ? 443 : 80)
            let path = parsed.path(percentEncoded: true)
            target = (path.isEmpty ? "/" : path) + (parsed.query(percentEncoded: true).map { "?\($0)" } ?? "")
        }

        /// The `Host` header: the port only where it is not the scheme's.
        var hostHeader: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
        }
    }

    /// How long to keep trying to connect: a refused or failed connection is tried again, as the
    /// service may be starting, until this runs out.
    public var connectTimeout: TimeAmount
    /// How long the whole request may take.
    public var deadline: TimeAmount
    /// The most of an answer's body kept; the rest is read and dropped.
    public var answerLimit: Int

    public init(
        connectTimeout: TimeAmount = .seconds(5), deadline: TimeAmount = .hours(24), answerLimit: Int = 16 << 20
    ) {
        self.connectTimeout = connectTimeout
        self.deadline = deadline
        self.answerLimit = answerLimit
    }

    /// Sends the request and returns the answer, whatever its status. Errors from reading the
    /// body (a file gone) are thrown as they are; failing to connect, or losing the connection,
    /// as a `Failure`.
    public func send<Body: AsyncSequence & Sendable>(
        method: HTTPMethod, to endpoint: Endpoint, headers: [(String, String)], body: Body, length: Int64
    ) async throws -> Answer where Body.Element == ByteBuffer {
        let channel = try await connect(endpoint)
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: endpoint.target)
        head.headers.add(name: "Host", value: endpoint.hostHeader)
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        head.headers.add(name: "Content-Length", value: String(length))
        head.headers.add(name: "Connection", value: "close")
        let requestHead = head
        let limit = answerLimit
        let deadline = deadline
        return try await channel.executeThenClose { inbound, outbound in
            try await withThrowingTaskGroup(of: Answer?.self) { group in
                group.addTask {
                    // A write that fails means the connection is gone: the reader says whether
                    // an answer came first. The body's own errors (a file gone) end the request.
                    func sent(_ part: HTTPClientRequestPart) async -> Bool {
                        do {
                            try await outbound.write(part)
                            return true
                        } catch {
                            return false
                        }
                    }
                    guard await sent(.head(requestHead)) else { return nil }
                    for try await chunk in body {
                        guard await sent(.body(.byteBuffer(chunk))) else { return nil }
                    }
                    _ = await sent(.end(nil))
                    return nil
                }
                group.addTask {
                    try await Task.sleep(for: .nanoseconds(deadline.nanoseconds))
                    throw Failure.stoppedAnswering
                }
                group.addTask {
                    do {
                        return try await Self.answer(from: inbound, keeping: limit)
                    } catch let error as Failure {
                        throw error
                    } catch {
                        throw Failure(connectionError: error)
                    }
                }
                while let result = try await group.next() {
                    if let answer = result {
                        group.cancelAll()
                        return answer
                    }
                }
                throw Failure.closedEarly
            }
        }
    }

    /// The answer, its body cut at `limit` bytes.
    private static func answer(
        from inbound: NIOAsyncChannelInboundStream<HTTPClientResponsePart>, keeping limit: Int
    ) async throws -> Answer {
        var status: HTTPResponseStatus?
        var body = ByteBuffer()
        for try await part in inbound {
            switch part {
            case .head(let response):
                // 100 Continue and other interim answers precede the real one.
                if response.status.code >= 200 { status = response.status }
            case .body(var chunk):
                guard status != nil else { continue }
                let room = limit - body.readableBytes
                if room > 0, let kept = chunk.readSlice(length: min(room, chunk.readableBytes)) {
                    body.writeImmutableBuffer(kept)
                }
            case .end:
                if let status { return Answer(status: Int(status.code), reason: status.reasonPhrase, body: body) }
            }
        }
        throw Failure.closedEarly
    }

    /// A connection to `endpoint`, TLS set up for `https`, tried again until `connectTimeout`.
    private func connect(
        _ endpoint: Endpoint
    ) async throws(Failure) -> NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart> {
        let start = NIODeadline.now()
        let tls: NIOSSLContext?
        do {
            tls = endpoint.secure ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        } catch {
            throw .noConnection("TLS could not be set up: \(error)")
        }
        var lastError: any Error = ChannelError.connectTimeout(connectTimeout)
        while true {
            let remaining = connectTimeout - (NIODeadline.now() - start)
            guard remaining > .zero else { break }
            do {
                return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .connectTimeout(remaining)
                    .connect(host: endpoint.host, port: endpoint.port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            if let tls {
                                let handler = try NIOSSLClientHandler(
                                    context: tls, serverHostname: endpoint.host.isIPAddress ? nil : endpoint.host)
                                try channel.pipeline.syncOperations.addHandler(handler)
                            }
                            try channel.pipeline.syncOperations.addHTTPClientHandlers()
                            return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                                wrappingChannelSynchronously: channel)
                        }
                    }
            } catch {
                // The last try has what time is left, which on a busy machine can run out before
                // a refusal comes back: a refusal seen earlier says more than that time-out.
                if let timeout = error as? ChannelError, case .connectTimeout = timeout, !(lastError is ChannelError) {
                } else {
                    lastError = error
                }
                // A service starting up refuses for a moment; anything else is tried again too,
                // in case it is as passing.
                try? await Task.sleep(for: .milliseconds(100))
                if Task.isCancelled { break }
            }
        }
        if let error = lastError as? ChannelError, case .connectTimeout = error {
            throw .noConnection("no connection within the time limit")
        }
        throw .noConnection(ConnectionFailure.describe(lastError))
    }
}

extension String {
    /// An IPv4 or IPv6 literal, which TLS may not name as the server (SNI).
    fileprivate var isIPAddress: Bool { (try? SocketAddress(ipAddress: self, port: 0)) != nil }
}
