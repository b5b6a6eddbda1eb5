import CMosquitto
import Glibc
import Synchronization

/// One connection to an MQTT broker through libmosquitto's threaded interface: libmosquitto's
/// own thread connects, reconnects (1 s, backing off to 30 s) and calls back. MQTT 3.1.1, clean
/// sessions: after each (re)connection the client subscribes again to what it was asked to, and
/// `events` hears `.connected`, the moment to publish retained state again (the broker published
/// the will when the connection was lost).
public final class MQTTClient: @unchecked Sendable {
    public struct Message: Equatable, Sendable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int32
        public var retain: Bool

        public init(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = false) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }

        public init(topic: String, text: String, qos: Int32 = 1, retain: Bool = false) {
            self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
        }

        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    public struct Options: Sendable {
        public var broker: BrokerAddress
        public var clientId: String
        /// Published by the broker if the connection is lost without a goodbye.
        public var will: Message?
        public var keepAliveSeconds: Int32 = 10
        /// TLS (`mqtts://`): the CA that signed the broker's certificate (nil: the system's, in
        /// /etc/ssl/certs),
        /// a client certificate and key when the broker asks for one, and whether to skip the
        /// check of the broker's name (a test broker's self-signed certificate).
        public var caFile: String?
        public var certFile: String?
        public var keyFile: String?
        public var insecure = false

        public init(broker: BrokerAddress, clientId: String, will: Message? = nil) {
            self.broker = broker
            self.clientId = clientId
            self.will = will
        }
    }

    public enum Event: Sendable {
        case connected
        /// Lost or refused, in libmosquitto's words; it tries again by itself.
        case disconnected(String)
        case message(Message)
        /// What libmosquitto logged as an error: a TLS handshake refused, a name that does not
        /// resolve. Connection attempts that fail there do not reach `.disconnected`.
        case error(String)
    }

    public let options: Options
    private let handle: OpaquePointer
    private let events: @Sendable (Event) -> Void
    private let subscriptions = Mutex<[String: Int32]>([:])
    private let started = Atomic<Bool>(false)

    /// Sets the client up (login, TLS, will); `start` connects.
    public init(options: Options, events: @escaping @Sendable (Event) -> Void) throws(MQTTError) {
        Self.initialiseLibrary
        guard let handle = mosquitto_new(options.clientId, true, nil) else {
            throw MQTTError(operation: "create a client", code: MOSQ_ERR_NOMEM.rawValue)
        }
        self.handle = handle
        self.options = options
        self.events = events
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        try check("set the protocol", mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311))
        if let username = options.broker.username {
            try check("set the login", mosquitto_username_pw_set(handle, username, options.broker.password))
        }
        if options.broker.tls {
            // Without a CA file, the system's CAs (Debian's ca-certificates, hashed for OpenSSL).
            try check(
                "set up TLS",
                mosquitto_tls_set(
                    handle, options.caFile, options.caFile == nil ? "/etc/ssl/certs" : nil, options.certFile,
                    options.keyFile, nil))
            if options.insecure { try check("skip the name check", mosquitto_tls_insecure_set(handle, true)) }
        }
        if let will = options.will {
            try check(
                "set the will",
                will.payload.withUnsafeBytes {
                    mosquitto_will_set(handle, will.topic, Int32($0.count), $0.baseAddress, will.qos, will.retain)
                })
        }
        mosquitto_reconnect_delay_set(handle, 1, 30, true)
        mosquitto_connect_callback_set(handle) { _, context, code in
            MQTTClient.from(context).connected(code)
        }
        mosquitto_disconnect_callback_set(handle) { _, context, code in
            MQTTClient.from(context).events(.disconnected(code == 0 ? "disconnected" : MQTTClient.describe(code)))
        }
        mosquitto_log_callback_set(handle) { _, context, level, text in
            guard level & MOSQ_LOG_ERR != 0, let text else { return }
            MQTTClient.from(context).events(.error(String(cString: text)))
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let message = message?.pointee else { return }
            let payload =
                message.payloadlen > 0
                ? Array(UnsafeRawBufferPointer(start: message.payload, count: Int(message.payloadlen))) : []
            MQTTClient.from(context).events(
                .message(
                    Message(
                        topic: String(cString: message.topic), payload: payload, qos: message.qos,
                        retain: message.retain)))
        }
    }

    deinit {
        if started.load(ordering: .acquiring) { mosquitto_loop_stop(handle, true) }
        mosquitto_destroy(handle)
    }

    private static let initialiseLibrary: Void = { mosquitto_lib_init() }()

    private static func from(_ context: UnsafeMutableRawPointer?) -> MQTTClient {
        Unmanaged<MQTTClient>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Starts libmosquitto's thread and connects; a broker that is not there yet is tried again
    /// until it is (`.disconnected` says why meanwhile).
    public func start() throws(MQTTError) {
        try check("start its thread", mosquitto_loop_start(handle))
        started.store(true, ordering: .releasing)
        let code = mosquitto_connect_async(
            handle, options.broker.host, options.broker.port, options.keepAliveSeconds)
        // Refused now (nobody listening yet), or a TLS handshake that failed at once (on a busy
        // machine one can, with the broker up): the thread connects again by itself, and a
        // handshake that keeps failing (a wrong CA) is told each time, as a refusal is.
        if code != MOSQ_ERR_SUCCESS.rawValue && code != MOSQ_ERR_ERRNO.rawValue && code != MOSQ_ERR_TLS.rawValue {
            throw MQTTError(operation: "connect to \(options.broker)", code: code)
        }
        if code == MOSQ_ERR_ERRNO.rawValue { events(.disconnected(String(cString: strerror(errno)))) }
        if code == MOSQ_ERR_TLS.rawValue { events(.disconnected("the TLS handshake failed")) }
    }

    /// Subscribes now if connected, and after every reconnection.
    public func subscribe(_ pattern: String, qos: Int32 = 1) {
        subscriptions.withLock { $0[pattern] = qos }
        mosquitto_subscribe(handle, nil, pattern, qos)
    }

    /// Queues a message; libmosquitto sends it when connected (QoS 1 and 2 are sent again
    /// across a reconnection; QoS 0 is lost if the connection is).
    public func publish(_ message: Message) throws(MQTTError) {
        let code = message.payload.withUnsafeBytes {
            mosquitto_publish(handle, nil, message.topic, Int32($0.count), $0.baseAddress, message.qos, message.retain)
        }
        // Not connected right now: QoS 1 and 2 wait in libmosquitto's queue.
        if code == MOSQ_ERR_NO_CONN.rawValue && message.qos > 0 { return }
        try check("publish to \(message.topic)", code)
    }

    /// Says goodbye (the broker does not publish the will) and stops the thread. With
    /// `sendingGoodbye: false` the connection is only dropped, as when the process dies: the
    /// broker publishes the will.
    public func stop(sendingGoodbye: Bool = true) {
        guard started.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if sendingGoodbye {
            mosquitto_disconnect(handle)
            mosquitto_loop_stop(handle, false)
        } else {
            mosquitto_loop_stop(handle, true)
            // The socket closed under the broker, as the kernel closes a dead process's.
            let socket = mosquitto_socket(handle)
            if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    private func connected(_ code: Int32) {
        guard code == 0 else {
            events(.disconnected("the broker refused: \(String(cString: mosquitto_connack_string(code)))"))
            return
        }
        for (pattern, qos) in subscriptions.withLock({ $0 }) { mosquitto_subscribe(handle, nil, pattern, qos) }
        events(.connected)
    }

    private func check(_ operation: String, _ code: Int32) throws(MQTTError) {
        if code != MOSQ_ERR_SUCCESS.rawValue { throw MQTTError(operation: operation, code: code) }
    }

    static func describe(_ code: Int32) -> String {
        code == MOSQ_ERR_ERRNO.rawValue ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(code))
    }
}

/// A libmosquitto call that failed: what was being done, and libmosquitto's reason.
public struct MQTTError: Error, CustomStringConvertible {
    public var operation: String
    public var code: Int32
    public var reason: String

    init(operation: String, code: Int32) {
        self.operation = operation
        self.code = code
        reason = MQTTClient.describe(code)
    }

    public var description: String { "MQTT: cannot \(operation): \(reason)" }
}
