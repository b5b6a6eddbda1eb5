import FieldcapPreview
import NIOCore
import NIOPosix
import ServiceLifecycle

/// One camera's preview over TCP in SCMF v1, the SimulatorCamera protocol, so its clients (an
/// iOS app in the Simulator, a script) receive the rig's camera as they would a Mac's.
///
/// Each frame is one message, little-endian: magic `0x53434D46` (a UInt32, so the bytes on the
/// wire are `46 4D 43 53`), the payload length (a UInt32: 20 + the JPEG's bytes, counting
/// everything after the magic), the frame's time as Float64 seconds (its `capture_ns` in
/// CLOCK_MONOTONIC_RAW), width and height (UInt32), then the JPEG. One client at a time: a
/// client that connects while another watches waits until that one leaves, so sequential
/// reconnects are served; the client never sends anything.
public final class SCMFServer: Service, Sendable {
    public static let magic: UInt32 = 0x5343_4D46
    public static let defaultPort = 9876

    public let stream: PreviewStream
    public let host: String
    /// The port it listens on (the one the kernel picked when asked for 0).
    public let port: Int
    private let listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>

    private init(
        stream: PreviewStream, host: String, port: Int,
        listener: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    ) {
        self.stream = stream
        self.host = host
        self.port = port
        self.listener = listener
    }

    /// Listens on `host:port` for `stream`'s viewers; throws NIO's error when the address is
    /// taken or not this machine's.
    public static func bind(host: String, port: Int, stream: PreviewStream) async throws -> SCMFServer {
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        return SCMFServer(
            stream: stream, host: host, port: listener.channel.localAddress?.port ?? port, listener: listener)
    }

    /// Serves clients one after another until the service shuts down.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await self.listener.executeThenClose { clients in
                    for try await client in clients {
                        await self.serve(client)
                    }
                }
            }
        } catch  where error is CancellationError || Task.isShuttingDownGracefully {
            // The service's shutdown ends the loop: nothing went wrong.
        }
    }

    /// Sends frames until the client closes its end or a write fails.
    private func serve(_ client: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let stream = stream
        try? await client.executeThenClose { input, output in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Nothing is expected from the client: the end of its input is its leaving.
                    for try await _ in input {}
                }
                group.addTask {
                    for await frame in stream.frames() {
                        try await output.write(Self.message(frame))
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }

    /// One frame as an SCMF v1 message.
    public static func message(_ frame: PreviewFrame) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(24 + frame.jpeg.count)
        buffer.writeInteger(magic, endianness: .little)
        buffer.writeInteger(UInt32(20 + frame.jpeg.count), endianness: .little)
        buffer.writeInteger((Double(frame.captureNs) / 1e9).bitPattern, endianness: .little)
        buffer.writeInteger(UInt32(frame.width), endianness: .little)
        buffer.writeInteger(UInt32(frame.height), endianness: .little)
        buffer.writeBytes(frame.jpeg)
        return buffer
    }
}
