import CAvahi
import Logging
import Synchronization

/// Announces a service on the local network with DNS-SD over mDNS, through the system's
/// avahi-daemon (the Linux standard, over D-Bus): browsers (`avahi-browse`, Bonjour, python-zeroconf)
/// find it by its type. A rig without avahi-daemon still serves: the announcer says so once and
/// announces as soon as the daemon appears. A name another host already uses is replaced by
/// Avahi's alternative (`fieldcap rig07 #2`).
///
/// Thread-safe: Avahi's callbacks run on its own thread, under its lock; `stop` takes that lock.
public final class ServiceAnnouncer: @unchecked Sendable {
    public struct Announcement: Sendable, Equatable {
        /// The instance name people see: `fieldcap rig07`.
        public var name: String
        /// `_fieldcap._tcp`.
        public var type: String
        public var port: Int
        /// TXT records, `key=value`, in this order.
        public var txt: [(String, String)]

        public init(name: String, type: String, port: Int, txt: [(String, String)]) {
            self.name = name
            self.type = type
            self.port = port
            self.txt = txt
        }

        public static func == (lhs: Announcement, rhs: Announcement) -> Bool {
            lhs.name == rhs.name && lhs.type == rhs.type && lhs.port == rhs.port
                && lhs.txt.map { "\($0)=\($1)" } == rhs.txt.map { "\($0)=\($1)" }
        }
    }

    public let announcement: Announcement
    /// What the user should hear (once each): announced (notice), no daemon or a failure
    /// (warning).
    private let logger: Logger
    private var avahi: AvahiSession?
    private var group: OpaquePointer?
    /// The name in use: Avahi's alternative after a collision.
    private var name: String
    private var saidNoDaemon = false
    private var saidAnnounced = false

    public init(_ announcement: Announcement, logger: Logger) {
        self.announcement = announcement
        self.logger = logger
        name = announcement.name
    }

    /// One line for the user: a notice, or a warning when something does not work.
    private func log(_ text: String, _ level: Logger.Level = .notice) { logger.log(level: level, "\(text)") }

    deinit { stop() }

    /// Starts announcing (or waiting for avahi-daemon). Throws only when Avahi cannot run at all.
    public func start() throws(DiscoveryError) {
        let session = AvahiSession { [unowned self] client, state in clientChanged(client, state) }
        avahi = session
        try session.start()
    }

    /// Withdraws the announcement and ends Avahi's thread.
    public func stop() {
        avahi?.stop { [self] in
            if let group { avahi_entry_group_free(group) }
            group = nil
        }
        avahi = nil
    }

    /// Avahi's thread.
    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            register(client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The host name changed or collided: the daemon re-registers it; ours follow.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            if !saidNoDaemon {
                saidNoDaemon = true
                log(
                    "avahi-daemon is not running: the rig is not announced on the network "
                        + "(it will be once avahi-daemon starts; Debian: apt install avahi-daemon)",
                    .warning)
            }
        case AVAHI_CLIENT_FAILURE:
            log(
                "avahi-daemon went away (\(String(cString: avahi_strerror(avahi_client_errno(client))))): "
                    + "the rig is no longer announced", .warning)
        default:
            break
        }
    }

    /// Avahi's thread: adds the service to a new or reset entry group and commits it.
    private func register(_ client: OpaquePointer) {
        if group == nil {
            let context = Unmanaged.passUnretained(self).toOpaque()
            group = avahi_entry_group_new(
                client,
                { group, state, context in
                    guard let group, let context else { return }
                    Unmanaged<ServiceAnnouncer>.fromOpaque(context).takeUnretainedValue().groupChanged(group, state)
                }, context)
        }
        guard let group else {
            let why = String(cString: avahi_strerror(avahi_client_errno(client)))
            log("Avahi: \(why): the rig is not announced", .warning)
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        var records: UnsafeMutablePointer<AvahiStringList>? = nil
        for (key, value) in announcement.txt.reversed() {
            // avahi_string_list_add prepends: added last to first, they come out in order.
            records = avahi_string_list_add(records, "\(key)=\(value)")
        }
        defer { avahi_string_list_free(records) }
        let result = avahi_entry_group_add_service_strlst(
            group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0), name,
            announcement.type, nil, nil,
            UInt16(announcement.port), records)
        if result == AVAHI_ERR_COLLISION {
            rename()
            register(client)
            return
        }
        guard result == 0, avahi_entry_group_commit(group) == 0 else {
            log("Avahi could not announce \(name): \(String(cString: avahi_strerror(result)))", .warning)
            return
        }
    }

    /// Avahi's thread.
    private func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            if !saidAnnounced {
                saidAnnounced = true
                log("announced as '\(name)' (\(announcement.type)) on the local network")
            }
        case AVAHI_ENTRY_GROUP_COLLISION:
            let old = name
            rename()
            log("another host is announced as '\(old)': this rig is now '\(name)'")
            avahi_entry_group_reset(group)
            if let client = avahi_entry_group_get_client(group) { register(client) }
        case AVAHI_ENTRY_GROUP_FAILURE:
            let client = avahi_entry_group_get_client(group)
            log(
                "Avahi could not announce \(name): \(String(cString: avahi_strerror(avahi_client_errno(client))))",
                .warning)
        default:
            break
        }
    }

    private func rename() {
        guard let alternative = avahi_alternative_service_name(name) else { return }
        name = String(cString: alternative)
        avahi_free(alternative)
    }
}

public struct DiscoveryError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
