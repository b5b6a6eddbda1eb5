import FieldcapCore
import FieldcapPreview
import FieldcapRig
import FoundationEssentials
import Glibc
import HummingbirdWebSocket
import NIOCore
import SyncField
import Synchronization

/// One Foxglove client: server info and the channels first, then a task for each subscription
/// that sends its channel's messages as they come. Every source keeps what a client has not yet
/// taken to a bound (a preview its newest frame, a sensor its newest 128 batches, the status its
/// newest), so a client that reads slowly loses whole messages, the oldest first, and holds no
/// more memory however far behind it falls; the rig's capture never waits for it.
struct FoxgloveConnection {
    let rig: RigService
    let catalog: FoxgloveCatalog
    let clock: LiveUTCClock
    let sessionId: String
    /// Messages a second each sensor channel sends at most (nil: every sample).
    let maxSensorRate: Double?

    /// A client's text message is a subscribe or an unsubscribe of a few hundred bytes; one
    /// bigger than this ends the connection.
    static let maxClientMessage = 64 << 10

    /// A write that has not finished within this long (the client stopped reading, or left
    /// without closing: a laptop off the Wi-Fi) ends the connection, so a stuck client does not
    /// hold one of the server's places for good.
    static let writeDeadline = Duration.seconds(10)

    /// `closeNow` drops the connection's socket: called when a write has stalled.
    func serve(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, closeNow: @escaping @Sendable () -> Void
    ) async throws {
        let writer = WatchedWriter(outbound: outbound)
        try await writer.write(
            .text(
                FoxgloveProtocol.serverInfo(
                    name: "fieldcap \(rig.settings.hostId)", sessionId: sessionId,
                    metadata: ["host_id": rig.settings.hostId, "api": "v1"])))
        try await writer.write(.text(FoxgloveProtocol.advertise(catalog.channels)))
        let subscriptions = Subscriptions()
        defer { subscriptions.cancelAll() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await read(inbound, into: subscriptions, writer: writer)
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(1))
                    if writer.stalled(longerThan: Self.writeDeadline) {
                        closeNow()
                        throw WatchedWriter.Stalled()
                    }
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// The client's messages, until it closes: subscriptions (one per channel: a channel asked
    /// for again is refused, so a client cannot multiply the work done for it) and
    /// unsubscriptions.
    private func read(
        _ inbound: WebSocketInboundStream,
        into subscriptions: Subscriptions, writer: WatchedWriter
    ) async throws {
        for try await message in inbound.messages(maxSize: Self.maxClientMessage) {
            guard case .text(let text) = message else {
                try await writer.status(.warning, "this server takes no client publishing: binary message ignored")
                continue
            }
            switch FoxgloveProtocol.parse(Array(text.utf8)) {
            case .subscribe(let asked):
                for (id, channelId) in asked {
                    guard let entry = catalog.entries[channelId] else {
                        try await writer.status(.error, "subscribe: no channel \(channelId) (see advertise)")
                        continue
                    }
                    let refusal = subscriptions.taken.withLock { taken -> String? in
                        if taken[id] != nil { return "subscribe: subscription \(id) is already in use" }
                        if let other = taken.first(where: { $0.value.channelId == channelId }) {
                            return "subscribe: channel \(channelId) is already subscribed (subscription \(other.key))"
                        }
                        taken[id] = (channelId, Task { await send(entry, as: id, to: writer) })
                        return nil
                    }
                    if let refusal { try await writer.status(.error, refusal) }
                }
            case .unsubscribe(let ids):
                for id in ids {
                    if let gone = subscriptions.taken.withLock({ $0.removeValue(forKey: id) }) {
                        gone.task.cancel()
                    } else {
                        try await writer.status(.warning, "unsubscribe: no subscription \(id)")
                    }
                }
            case .unsupported(let op):
                try await writer.status(.warning, "\"\(op)\" is not served here (see serverInfo's capabilities)")
            case .invalid(let why):
                try await writer.status(.error, why)
            }
        }
    }

    /// Sends `entry`'s messages as subscription `id` until cancelled or a write fails.
    private func send(_ entry: FoxgloveCatalog.Entry, as id: UInt32, to outbound: WatchedWriter) async {
        do {
            switch entry.source {
            case .preview(let stream):
                for await frame in stream.frames() {
                    let utc = clock.utcNs(raw: frame.captureNs)
                    let payload = FoxgloveMessages.compressedImage(frame, camera: stream.id, utcNs: utc)
                    try await outbound.write(
                        .binary(FoxgloveProtocol.messageData(subscription: id, logTimeNs: utc, payload: payload)))
                }
            case .sensor(let sensor):
                guard let batches = rig.live.samples(of: sensor.id) else { return }
                let keys = FoxgloveMessages.sampleKeys(sensor.channels)
                var cap = LiveRateCap(rate: maxSensorRate)
                for await batch in batches {
                    for sample in batch where cap.admits(sample.captureNs) {
                        let utc = clock.utcNs(raw: sample.captureNs)
                        let payload =
                            sensor.isFeed
                            ? FoxgloveMessages.feedRecord(sample, utcNs: utc)
                            : FoxgloveMessages.sample(sample, keys: keys, utcNs: utc)
                        try await outbound.write(
                            .binary(FoxgloveProtocol.messageData(subscription: id, logTimeNs: utc, payload: payload)))
                    }
                }
            case .clock:
                while !Task.isCancelled {
                    let utc = clock.utcNs(raw: MonotonicClock.now())
                    let payload = JSONBody.encode(
                        ClockHealthBody(
                            timestamp: .init(utcNs: utc),
                            streams: Dictionary(
                                rig.clockHealth.map { ($0.id, ClockBody($0.health)) }, uniquingKeysWith: { a, _ in a }))
                    )
                    try await outbound.write(
                        .binary(FoxgloveProtocol.messageData(subscription: id, logTimeNs: utc, payload: payload)))
                    try await Task.sleep(for: .seconds(1))
                }
            case .status:
                while !Task.isCancelled {
                    let payload = JSONBody.encode(StatusBody(rig.status))
                    let utc = clock.utcNs(raw: MonotonicClock.now())
                    try await outbound.write(
                        .binary(FoxgloveProtocol.messageData(subscription: id, logTimeNs: utc, payload: payload)))
                    try await Task.sleep(for: .seconds(1))
                }
            }
        } catch {
            // The client left, or unsubscribed: nothing to tell.
        }
    }
}

/// A connection's subscriptions, by the client's id: the channel and the task sending it.
final class Subscriptions: Sendable {
    let taken = Mutex<[UInt32: (channelId: UInt32, task: Task<Void, Never>)]>([:])

    func cancelAll() {
        for subscription in taken.withLock({ $0.values }) { subscription.task.cancel() }
    }
}

/// The connection's writes, watched: how many are waiting for the client's socket, and when
/// one last finished.
final class WatchedWriter: Sendable {
    struct Stalled: Error {}

    let outbound: WebSocketOutboundWriter
    private let waiting = Atomic<Int>(0)
    private let progressNs = Atomic<UInt64>(MonotonicClock.now())

    init(outbound: WebSocketOutboundWriter) { self.outbound = outbound }

    func write(_ frame: WebSocketOutboundWriter.OutboundFrame) async throws {
        waiting.add(1, ordering: .relaxed)
        defer {
            waiting.subtract(1, ordering: .relaxed)
            progressNs.store(MonotonicClock.now(), ordering: .relaxed)
        }
        try await outbound.write(frame)
    }

    func status(_ level: FoxgloveProtocol.Level, _ message: String) async throws {
        try await write(.text(FoxgloveProtocol.status(level, message)))
    }

    /// A write has waited, and none finished, for longer than `limit`.
    func stalled(longerThan limit: Duration) -> Bool {
        let limitNs = UInt64(limit.components.seconds) * 1_000_000_000
        return waiting.load(ordering: .relaxed) > 0
            && MonotonicClock.now() &- progressNs.load(ordering: .relaxed) > limitNs
    }
}

/// `/fieldcap/clock`'s message.
struct ClockHealthBody: Encodable {
    struct Time: Encodable {
        var sec: UInt64
        var nsec: UInt64
        init(utcNs: UInt64) {
            sec = utcNs / 1_000_000_000
            nsec = utcNs % 1_000_000_000
        }
    }

    var timestamp: Time
    var streams: [String: ClockBody]
}

/// `CLOCK_MONOTONIC_RAW` instants as UTC, through a clock pair read at most a second ago: a
/// live view's times (Foxglove shows dates), not a session's (whose sync point says how its
/// times map).
final class LiveUTCClock: Sendable {
    private struct Pair {
        var rawNs: Int64
        var offsetNs: Int64
    }

    private let pair = Mutex<Pair?>(nil)

    func utcNs(raw: UInt64) -> UInt64 {
        let now = MonotonicClock.now()
        let offset = pair.withLock { pair -> Int64 in
            if let current = pair, Int64(bitPattern: now) - current.rawNs < 1_000_000_000 { return current.offsetNs }
            let sample = ClockPairReader.host(CLOCK_REALTIME, burst: 3).sample()
            pair = Pair(rawNs: sample.rawNs, offsetNs: sample.offsetNs)
            return sample.offsetNs
        }
        return UInt64(clamping: Int64(bitPattern: raw) &- offset)
    }
}
