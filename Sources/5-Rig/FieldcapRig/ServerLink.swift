import Synchronization

/// The capture server a rig keeps a connection to (`fieldcap serve --server`), as the status
/// shows it: where, in which state, what it last said. The client that holds the connection
/// writes it; the API and the events read it.
public final class ServerLink: Sendable {
    public enum State: String, Sendable {
        case disconnected, connecting, connected
        /// Connected over `wss://`, the certificate checked.
        case connectedSecurely = "connected_securely"
    }

    public struct Snapshot: Sendable, Equatable {
        /// The server's URL, nil while `--server auto` has found none.
        public var url: String?
        public var state: State = .disconnected
        /// The name the rig gives itself (`clientInfo`).
        public var name: String
        /// Why the last attempt or connection ended.
        public var lastError: String?
        /// Servers DNS-SD showed (`--server auto`), as `name (ws://host:port)`.
        public var seen: [String] = []
        public var connections = 0
        public var commands = 0
        public var uploads = 0
        /// Uploads given up: refused by the server, over its message limit, or out of attempts.
        public var uploadFailures = 0
        /// Why the last upload given up was.
        public var lastUploadFailure: String?
        /// The server's last command or message and what the rig did with it: the rig answers
        /// nothing on the socket (the server would take an answer for an unknown message).
        public var lastCommand: String?
        /// Uploads waiting or under way.
        public var uploadsPending = 0
    }

    private let snapshot: Mutex<Snapshot>

    public init(url: String?, name: String) {
        snapshot = Mutex(Snapshot(url: url, name: name))
    }

    public var current: Snapshot { snapshot.withLock { $0 } }

    public func update(_ change: (inout Snapshot) -> Void) {
        snapshot.withLock { change(&$0) }
    }
}
