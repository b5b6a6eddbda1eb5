import FieldcapPreview
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// One camera's preview over TCP in SCMF v1, the SimulatorCamera protocol, so its clients (an
/// iOS app in the Simulator, a script) receive the rig's camera as they would a Mac's.
///
/// Each frame is one message, little-endian: magic `0x53434D46` (a UInt32, so the bytes on the
/// wire are `46 4D 43 53`), the payload length (a UInt32: 20 + the JPEG's bytes, counting
/// everything after the magic), the frame's time as Float64 seconds (its `capture_ns` in
/// CLOCK_MONOTONIC_RAW), width and height (UInt32), then the JPEG. The client never sends
/// anything.
///
/// Clients are served side by side, each with the newest frame when it is ready for one, so a
/// client that connects and never reads holds only its own connection, never the preview (#42):
/// a frame it has not taken within `writeDeadline` ends it. Past `maxClients` a connection is
/// closed at once, so a flood cannot take the descriptors the recording needs.
public final class SCMFServer: Service, Sendable {
    public static let magic: UInt32 = 0x5343_4D46
    public static let defaultPort = 9876
    public static let maxClients = 16
    /// How long one frame may wait for a client's socket: a JPEG takes well under a second even
    /// over a slow Wi-Fi link; longer is a client that stopped reading.
    public static let writeDeadline = Duration.seconds(5)

    private let clients = Atomic<Int>(0)

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
            // Little queued per client, so that one which stops reading is found out within a few
            // frames (Linux gives a loopback socket megabytes: a minute of preview) and one which
            // reads slowly gets recent frames, not old ones.
            .childChannelOption(.socketOption(.so_sndbuf), value: 32 << 10)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 << 10, high: 32 << 10))
            .bind(host: host, port: port) { child in
                child.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: child)
                }
            }
        return SCMFServer(
            stream: stream, host: host, port: listener.channel.localAddress?.port ?? port, listener: listener)
    }

    /// Serves clients, each on a task of its own, until the service shuts down.
    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await self.listener.executeThenClose { connections in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await client in connections {
                            guard self.clients.add(1, ordering: .relaxed).newValue <= Self.maxClients else {
                                self.clients.subtract(1, ordering: .relaxed)
                                try? await client.executeThenClose { _, _ in }
                                continue
                            }
                            group.addTask {
                                await self.serve(client)
                                self.clients.subtract(1, ordering: .relaxed)
                            }
                        }
                    }
                }
            }
        } catch  where error is CancellationError || Task.isShuttingDownGracefully {
            // The service's shutdown ends the loop: nothing went wrong.
        }
    }

    /// Sends frames until the client closes its end, a write fails, or one waits past
    /// `writeDeadline`.
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
                        try await Self.write(Self.message(frame), to: output)
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }

    /// A client that has not taken a frame within the deadline: its connection is closed.
    struct Stalled: Error {}

    /// Writes `message`, or throws `Stalled` once `writeDeadline` passes with the write still
    /// waiting for the client's socket.
    private static func write(_ message: ByteBuffer, to output: NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws
    {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await output.write(message) }
            group.addTask {
                try await Task.sleep(for: writeDeadline)
                throw Stalled()
            }
            _ = try await group.next()
            group.cancelAll()
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
