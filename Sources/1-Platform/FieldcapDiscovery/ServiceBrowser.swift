import CAvahi
import Logging
import Synchronization

/// Finds the services of one DNS-SD type on the local network through the system's
/// avahi-daemon, each resolved to an address and port (IPv4 first: what a WebSocket URL needs
/// least ceremony for). A rig without avahi-daemon says so once and browses as soon as it
/// appears.
///
/// Thread-safe: Avahi's callbacks run on its own thread, under its lock; `stop` takes that lock.
public final class ServiceBrowser: @unchecked Sendable {
    public struct Found: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var host: String
        public var address: String
        public var port: Int

        public var description: String { "\(name) (\(address):\(port))" }
    }

    public let type: String
    /// What the user should hear: no daemon, a failure (warnings).
    private let logger: Logger
    private let changed: @Sendable ([Found]) -> Void
    private var avahi: AvahiSession?
    private var browser: OpaquePointer?
    private var found: [String: Found] = [:]
    private var saidNoDaemon = false

    /// - Parameters:
    ///   - type: `_allspark._tcp`.
    ///   - changed: every resolved service, in the order found, each time one comes or goes.
    public init(
        type: String, logger: Logger, changed: @escaping @Sendable ([Found]) -> Void
    ) {
        self.type = type
        self.logger = logger
        self.changed = changed
    }

    /// One line for the user; every one the browser says is about something that does not work.
    private func log(_ text: String) { logger.warning("\(text)") }

    deinit { stop() }

    /// Starts browsing (or waiting for avahi-daemon). Throws only when Avahi cannot run at all.
    public func start() throws(DiscoveryError) {
        let session = AvahiSession { [unowned self] client, state in clientChanged(client, state) }
        avahi = session
        try session.start()
    }

    /// Ends the browsing and Avahi's thread.
    public func stop() {
        avahi?.stop { [self] in
            if let browser { avahi_service_browser_free(browser) }
            browser = nil
        }
        avahi = nil
    }

    /// Avahi's thread.
    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            guard browser == nil else { return }
            let context = Unmanaged.passUnretained(self).toOpaque()
            browser = avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC), type, nil,
                AvahiLookupFlags(0),
                { _, interface, proto, event, name, type, domain, _, context in
                    guard let context, let name, let type, let domain else { return }
                    Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue().browsed(
                        interface, proto, event, String(cString: name), String(cString: type), String(cString: domain))
                }, context)
            if browser == nil {
                log("Avahi cannot browse for \(type): \(String(cString: avahi_strerror(avahi_client_errno(client))))")
            }
        case AVAHI_CLIENT_CONNECTING:
            if !saidNoDaemon {
                saidNoDaemon = true
                log(
                    "avahi-daemon is not running: no \(type) server can be "
                        + "found (Debian: apt install avahi-daemon); waiting for it"
                )
            }
        case AVAHI_CLIENT_FAILURE:
            log("avahi-daemon went away (\(String(cString: avahi_strerror(avahi_client_errno(client)))))")
        default:
            break
        }
    }

    /// Avahi's thread: a service came (resolve it) or went.
    private func browsed(
        _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent, _ name: String, _ type: String,
        _ domain: String
    ) {
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let client = avahi?.client else { return }
            let context = Unmanaged.passUnretained(self).toOpaque()
            // IPv4 addresses first: resolved over either protocol, the answer asked for is A.
            let resolver = avahi_service_resolver_new(
                client, interface, proto, name, type, domain, AvahiProtocol(AVAHI_PROTO_INET), AvahiLookupFlags(0),
                { resolver, _, _, event, name, _, _, host, address, port, _, _, context in
                    defer { if let resolver { avahi_service_resolver_free(resolver) } }
                    guard let context, event == AVAHI_RESOLVER_FOUND, let name, let host, let address else { return }
                    var text = [UInt8](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
                    text.withUnsafeMutableBufferPointer { buffer in
                        buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                            _ = avahi_address_snprint($0, buffer.count, address)
                        }
                    }
                    Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue().resolved(
                        Found(
                            name: String(cString: name), host: String(cString: host),
                            address: String(decoding: text.prefix { $0 != 0 }, as: UTF8.self), port: Int(port)))
                }, context)
            if resolver == nil {
                log("Avahi cannot resolve \(name): \(String(cString: avahi_strerror(avahi_client_errno(client))))")
            }
        case AVAHI_BROWSER_REMOVE:
            if found.removeValue(forKey: name) != nil { changed(Array(found.values).sorted { $0.name < $1.name }) }
        case AVAHI_BROWSER_FAILURE:
            log("Avahi stopped browsing for \(type)")
        default:
            break
        }
    }

    /// Avahi's thread.
    private func resolved(_ service: Found) {
        found[service.name] = service
        changed(Array(found.values).sorted { $0.name < $1.name })
    }
}
