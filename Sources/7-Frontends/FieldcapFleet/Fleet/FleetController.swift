import FoundationEssentials
import Glibc
import Synchronization

/// The fleet seen from outside (`fieldcap fleet`): every rig's retained presence and status,
/// the replies to commands, and the commands themselves.
public final class FleetController: Sendable {
    public struct Rig: Sendable, Equatable {
        public var host: String
        public var presence: FleetPresence?
        public var status: FleetStatus?
    }

    public let topics: FleetTopics
    private let client: MQTTClient
    private let inbox = Inbox()

    /// What the connection's thread hands over.
    final class Inbox: Sendable {
        let seen = Mutex<Seen>(Seen())
        let connected = Atomic<Bool>(false)
        let problem = Mutex<String?>(nil)
    }

    struct Seen {
        var rigs: [String: Rig] = [:]
        var replies: [FleetReply] = []
    }

    public init(options: MQTTClient.Options, fleet: String) throws(MQTTError) {
        topics = FleetTopics(fleet: fleet)
        let topics = topics
        let inbox = inbox
        client = try MQTTClient(options: options) { event in
            switch event {
            case .connected: inbox.connected.store(true, ordering: .releasing)
            case .disconnected(let why), .error(let why): inbox.problem.withLock { $0 = why }
            case .message(let message):
                guard let (host, kind) = topics.rig(of: message.topic) else { return }
                inbox.seen.withLock { seen in
                    switch kind {
                    case "presence":
                        seen.rigs[host, default: Rig(host: host)].presence = FleetJSON.decode(
                            FleetPresence.self, message.payload)
                    case "status":
                        seen.rigs[host, default: Rig(host: host)].status = FleetJSON.decode(
                            FleetStatus.self, message.payload)
                    case "reply":
                        if let reply = FleetJSON.decode(FleetReply.self, message.payload) { seen.replies.append(reply) }
                    default: break
                    }
                }
            }
        }
        for kind in ["presence", "status", "reply"] { client.subscribe(topics.everyRig(kind)) }
    }

    /// Connects; throws with libmosquitto's reason if the broker is not reached in `seconds`.
    public func connect(seconds: Double = 10) throws(FleetError) {
        do { try client.start() } catch { throw FleetError(description: "\(error)") }
        let deadline = Date().addingTimeInterval(seconds)
        while !inbox.connected.load(ordering: .acquiring) {
            if Date() > deadline {
                let why = inbox.problem.withLock { $0 } ?? "no answer"
                throw FleetError(description: "cannot reach the broker \(client.options.broker): \(why)")
            }
            usleep(20_000)
        }
    }

    /// Every rig seen so far (retained presence and status arrive right after subscribing).
    public var rigs: [Rig] { inbox.seen.withLock { $0.rigs.values.sorted { $0.host < $1.host } } }

    public var replies: [FleetReply] { inbox.seen.withLock { $0.replies } }

    public func send(_ command: FleetCommand) throws(FleetError) {
        do {
            try client.publish(MQTTClient.Message(topic: topics.command, payload: FleetJSON.encode(command)))
        } catch {
            throw FleetError(description: "\(error)")
        }
    }

    public func close() { client.stop() }
}

public struct FleetError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }
}
