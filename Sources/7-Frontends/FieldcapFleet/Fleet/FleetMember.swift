import FieldcapCore
import FieldcapSystem
import FoundationEssentials
import Glibc
import Logging
import SyncField
import Synchronization

/// A rig's side of a fleet: on the broker as `fieldcap/fleet/NAME/rigs/HOST/...`, with retained
/// presence (the will says offline when the connection is lost) and status, and the fleet's
/// commands carried out through `Rig`: a start at a shared wall-clock instant, scheduled by this
/// rig's own clock; a stop. Replies go to the rig's reply topic; a start whose instant has passed
/// is `missed`, and the capture goes on without this rig.
public final class FleetMember: Sendable {
    /// What the rig does for the fleet: the front end's recording service.
    public struct Rig: Sendable {
        /// Starts recording with `captureId` at `atWallClockNs` (nil: now), returning once the
        /// sync point is taken: the session's directory and the sync point's wall clock.
        public var start: @Sendable (_ captureId: String, _ atWallClockNs: UInt64?) async throws -> (String, UInt64)
        /// Stops the recording; the session's directory.
        public var stop: @Sendable (_ why: String) async throws -> String
        /// The status to publish now.
        public var status: @Sendable () -> FleetStatus
        /// Marks the instant of a `mark` command on the recording; returns the mark's id and
        /// where it went, or throws why not.
        public var mark: @Sendable (FleetCommand) throws -> (id: String, session: String)

        public init(
            start: @escaping @Sendable (String, UInt64?) async throws -> (String, UInt64),
            stop: @escaping @Sendable (String) async throws -> String, status: @escaping @Sendable () -> FleetStatus,
            mark: @escaping @Sendable (FleetCommand) throws -> (id: String, session: String) = { _ in
                throw FleetError(description: "this rig takes no marks")
            }
        ) {
            self.start = start
            self.stop = stop
            self.status = status
            self.mark = mark
        }
    }

    public let host: String
    public let topics: FleetTopics
    /// How often the retained status is refreshed.
    public let statusEverySeconds: Double
    /// How far ahead a start's instant may be: a later one is refused, since the rig waits for
    /// it with its devices open and a start (a day, `UInt64.max` ahead) would hold it till then.
    public let horizonNs: UInt64
    /// The default horizon: ten minutes, far more than a fleet needs to get every rig ready.
    public static let defaultHorizonNs: UInt64 = 600_000_000_000
    private let rig: Rig
    /// What the rig's operator should hear: the broker reached or lost, commands taken or refused.
    private let logger: Logger
    private let client = Mutex<MQTTClient?>(nil)
    private let running = Atomic<Bool>(false)
    /// The capture being recorded, so a stop for another capture is refused.
    private let capture = Mutex<String?>(nil)
    /// The capture whose start waits for its instant: a stop for it calls the start off.
    private let pending = Mutex<String?>(nil)

    /// One line for the operator: a notice, or a warning for a command not carried out.
    private func log(_ text: String, _ level: Logger.Level = .notice) { logger.log(level: level, "\(text)") }

    /// `options` is the connection's (broker, login, TLS); the client id and the will are the
    /// rig's, set here.
    public init(
        options: MQTTClient.Options, fleet: String, host: String, version: String, rig: Rig,
        statusEverySeconds: Double = 2, horizonNs: UInt64 = FleetMember.defaultHorizonNs,
        logger: Logger
    ) throws(MQTTError) {
        self.host = host
        self.horizonNs = horizonNs
        topics = FleetTopics(fleet: fleet)
        self.rig = rig
        self.logger = logger
        self.statusEverySeconds = statusEverySeconds
        var options = options
        options.clientId = "fieldcap-\(fleet)-\(host)"
        options.will = MQTTClient.Message(
            topic: topics.presence(host), payload: FleetJSON.encode(FleetPresence(host: host, state: "offline")),
            retain: true)
        let online = MQTTClient.Message(
            topic: topics.presence(host),
            payload: FleetJSON.encode(FleetPresence(host: host, state: "online", version: version)), retain: true)
        let broker = options.broker
        let topics = topics
        let connectionLog = ConnectionLog(logger: logger)
        let client = try MQTTClient(options: options) { [weak self] event in
            switch event {
            case .connected:
                connectionLog.connected(to: broker, fleet: fleet)
                guard let self, let client = self.client.withLock({ $0 }) else { return }
                try? client.publish(online)
                self.publishStatus()
            case .disconnected(let why): connectionLog.lost(broker, why)
            case .error(let why): connectionLog.lost(broker, why)
            case .message(let message):
                guard message.topic == topics.command else { return }
                self?.handle(message)
            }
        }
        client.subscribe(topics.command)
        self.client.withLock { $0 = client }
    }

    /// Connects (and keeps reconnecting), and refreshes the status until `stop`.
    public func start() throws(MQTTError) {
        guard let client = client.withLock({ $0 }) else { return }
        running.store(true, ordering: .releasing)
        try client.start()
        let every = statusEverySeconds
        detachThread(named: "fc-fleet-status") { [self] in
            while running.load(ordering: .acquiring) {
                usleep(useconds_t(every * 1e6))
                if running.load(ordering: .acquiring) { publishStatus() }
            }
        }
    }

    /// Says offline and goodbye.
    public func stop() {
        running.store(false, ordering: .releasing)
        guard let client = client.withLock({ $0 }) else { return }
        try? client.publish(
            MQTTClient.Message(
                topic: topics.presence(host), payload: FleetJSON.encode(FleetPresence(host: host, state: "offline")),
                retain: true))
        usleep(200_000)  // the offline presence out before the goodbye
        client.stop()
    }

    private func publishStatus() {
        guard let client = client.withLock({ $0 }) else { return }
        var status = rig.status()
        switch status.state {
        case "idle": status.captureId = nil
        case "scheduled": status.captureId = pending.withLock { $0 }
        default: status.captureId = capture.withLock { $0 }
        }
        try? client.publish(
            MQTTClient.Message(topic: topics.status(host), payload: FleetJSON.encode(status), qos: 0, retain: true))
    }

    private func reply(_ reply: FleetReply) {
        try? client.withLock { $0 }?.publish(
            MQTTClient.Message(topic: topics.reply(host), payload: FleetJSON.encode(reply)))
    }

    private func handle(_ message: MQTTClient.Message) {
        // The broker hands a retained command to every rig that subscribes, long after it was
        // sent (a restart, a rig that joins): a command is for the rigs listening when it is sent.
        guard !message.retain else {
            log(
                "fleet: ignored a retained command (commands are acted on only as they are sent; "
                    + "clear it with `mosquitto_pub -r -n -t \(message.topic)`): \(message.text.prefix(200))",
                .warning)
            return
        }
        guard let command = FleetJSON.decode(FleetCommand.self, message.payload) else {
            log("fleet: ignored a command that is not one: \(message.text.prefix(200))", .warning)
            return
        }
        Task { [self] in
            switch command.command {
            case .start: await start(command)
            case .stop: await stop(command)
            // On a thread of its own: a mark waits for its fsyncs, which a slow disk holds.
            case .mark: detachThread(named: "fc-fleet-mark") { [self] in mark(command) }
            }
        }
    }

    /// A mark at the command's instant (or now), on whatever this rig records.
    private func mark(_ command: FleetCommand) {
        do {
            let (id, session) = try rig.mark(command)
            log("fleet: marked \(id) \"\(command.label ?? "")\" (\(command.captureId)) on \(session)")
            reply(
                FleetReply(
                    host: host, command: .mark, captureId: command.captureId, result: .marked, detail: id,
                    session: session))
        } catch {
            log("fleet: mark \(command.captureId) not taken: \(error)", .warning)
            reply(
                FleetReply(
                    host: host, command: .mark, captureId: command.captureId, result: .failed, detail: "\(error)"))
        }
    }

    private func start(_ command: FleetCommand) async {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        if let at = command.atWallClockNs, at < now {
            let late = Double(now - at) / 1e9
            log("fleet: missed the start of capture \(command.captureId): its instant passed \(late) s ago", .warning)
            reply(
                FleetReply(
                    host: host, command: .start, captureId: command.captureId, result: .missed,
                    detail: "the start instant had passed \(late) s before the command came", lateByNs: Int64(now - at))
            )
            return
        }
        if let at = command.atWallClockNs, at - now > horizonNs {
            let ahead = Double(at - now) / 1e9
            let detail =
                "the start instant is \(ahead) s ahead, beyond this rig's horizon "
                + "of \(Double(horizonNs) / 1e9) s (serve --fleet-horizon): refused"
            log("fleet: capture \(command.captureId) refused: \(detail)", .warning)
            reply(
                FleetReply(
                    host: host, command: .start, captureId: command.captureId, result: .failed, detail: detail))
            return
        }
        log(
            "fleet: capture \(command.captureId) starts "
                + (command.atWallClockNs.map { "at \(SyncPoint.isoDatetime(wallClockNs: $0))" } ?? "now"))
        if command.atWallClockNs != nil { pending.withLock { $0 = command.captureId } }
        defer { pending.withLock { if $0 == command.captureId { $0 = nil } } }
        do {
            let (session, syncWallNs) = try await rig.start(command.captureId, command.atWallClockNs)
            // Only once started: a start refused (already recording) leaves the running capture's id.
            capture.withLock { $0 = command.captureId }
            let late = command.atWallClockNs.map { Int64(bitPattern: syncWallNs &- $0) }
            reply(
                FleetReply(
                    host: host, command: .start, captureId: command.captureId, result: .started, session: session,
                    lateByNs: late))
        } catch {
            log("fleet: capture \(command.captureId) did not start: \(error)", .warning)
            reply(
                FleetReply(
                    host: host, command: .start, captureId: command.captureId, result: .failed, detail: "\(error)"))
        }
        publishStatus()
    }

    private func stop(_ command: FleetCommand) async {
        if let waiting = pending.withLock({ $0 }), waiting == command.captureId, rig.status().state == "scheduled" {
            // Its start waits for its instant: called off at once (a stop's own instant is for
            // a recording), leaving nothing on disk.
            let session = try? await rig.stop("fleet stop (capture \(command.captureId))")
            if let session, !session.isEmpty {
                // The instant came as the stop did: the recording that started is stopped.
                capture.withLock { $0 = nil }
                log("fleet: capture \(command.captureId) stopped as its start came: \(session)")
                reply(
                    FleetReply(
                        host: host, command: .stop, captureId: command.captureId, result: .stopped, session: session))
            } else {
                log("fleet: capture \(command.captureId) called off before its start")
                reply(
                    FleetReply(
                        host: host, command: .stop, captureId: command.captureId, result: .stopped,
                        detail: "its start instant had not come: called off, nothing recorded"))
            }
            publishStatus()
            return
        }
        let current = capture.withLock { $0 }
        guard current == command.captureId else {
            reply(
                FleetReply(
                    host: host, command: .stop, captureId: command.captureId, result: .failed,
                    detail: current.map { "recording capture \($0), not \(command.captureId)" } ?? "not recording"))
            return
        }
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1e9))
        if let at = command.atWallClockNs, at > now, at - now > horizonNs {
            reply(
                FleetReply(
                    host: host, command: .stop, captureId: command.captureId, result: .failed,
                    detail:
                        "the stop instant is \(Double(at - now) / 1e9) s ahead, beyond "
                        + "this rig's horizon of \(Double(horizonNs) / 1e9) s: refused"
                ))
            return
        }
        if let at = command.atWallClockNs { await WallClock.sleep(untilNs: at) }
        do {
            let session = try await rig.stop("fleet stop (capture \(command.captureId))")
            capture.withLock { $0 = nil }
            log("fleet: capture \(command.captureId) stopped: \(session)")
            reply(
                FleetReply(host: host, command: .stop, captureId: command.captureId, result: .stopped, session: session)
            )
        } catch {
            reply(
                FleetReply(
                    host: host, command: .stop, captureId: command.captureId, result: .failed, detail: "\(error)"))
        }
        publishStatus()
    }
}

/// Says once that the broker is reached or lost, not at every retry.
private final class ConnectionLog: Sendable {
    let logger: Logger
    let reachable = Mutex<Bool?>(nil)

    init(logger: Logger) { self.logger = logger }

    func connected(to broker: BrokerAddress, fleet: String) {
        if changed(to: true) { logger.notice("fleet: on \(broker) as a rig of fleet \(fleet)") }
    }

    func lost(_ broker: BrokerAddress, _ why: String) {
        if changed(to: false) { logger.warning("fleet: cannot reach \(broker) (\(why)); trying again") }
    }

    private func changed(to value: Bool) -> Bool {
        reachable.withLock { state in
            defer { state = value }
            return state != value
        }
    }
}
