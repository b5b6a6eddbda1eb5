import Foundation
import Synchronization
import TestSupport
import Testing

@testable import FieldcapFleet

/// What a client heard, for waiting on.
final class Heard: Sendable {
    let events = Mutex<[MQTTClient.Event]>([])

    func record(_ event: MQTTClient.Event) { events.withLock { $0.append(event) } }

    var connections: Int { events.withLock { $0.filter { if case .connected = $0 { true } else { false } }.count } }
    var messages: [MQTTClient.Message] {
        events.withLock { $0.compactMap { if case .message(let message) = $0 { message } else { nil } } }
    }
    var disconnections: [String] {
        events.withLock { $0.compactMap { if case .disconnected(let why) = $0 { why } else { nil } } }
    }
    var errors: [String] {
        events.withLock { $0.compactMap { if case .error(let why) = $0 { why } else { nil } } }
    }

    /// Waits up to `seconds` for `condition`.
    func wait(seconds: Double = 15, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(20_000)
        }
        return true
    }
}

/// The client against a real mosquitto broker, judged by mosquitto_sub and mosquitto_pub.
@Suite struct MQTTClientTests {
    static func client(
        _ broker: MosquittoBroker, id: String, will: MQTTClient.Message? = nil, heard: Heard
    ) throws
        -> MQTTClient
    {
        var options = MQTTClient.Options(broker: try BrokerAddress.parse(broker.url).get(), clientId: id, will: will)
        if broker.tls { options.caFile = broker.caFile }
        return try MQTTClient(options: options) { heard.record($0) }
    }

    /// Retained state, and the will: published by the broker when the connection is dropped
    /// without a goodbye (as a process that dies), not after one.
    @Test(arguments: [false, true]) func retainedStateAndTheWill(goodbye: Bool) throws {
        let broker = try MosquittoBroker()
        let heard = Heard()
        let client = try Self.client(
            broker, id: "rig-a", will: MQTTClient.Message(topic: "t/rig-a/presence", text: "offline", retain: true),
            heard: heard)
        try client.start()
        #expect(heard.wait { heard.connections == 1 })
        try client.publish(MQTTClient.Message(topic: "t/rig-a/presence", text: "online", retain: true))
        #expect(try broker.firstMessage(on: "t/rig-a/presence") == "online")
        client.stop(sendingGoodbye: goodbye)
        var seen: String?
        for _ in 0..<50 {
            usleep(100_000)
            seen = try broker.firstMessage(on: "t/rig-a/presence", seconds: 2)
            if seen == "offline" { break }
        }
        #expect(seen == (goodbye ? "online" : "offline"))
    }

    @Test func subscriptionsSurviveABrokerRestart() throws {
        let broker = try MosquittoBroker()
        let heard = Heard()
        let client = try Self.client(broker, id: "rig-c", heard: heard)
        client.subscribe("t/fleet/command")
        try client.start()
        #expect(heard.wait { heard.connections == 1 })
        usleep(200_000)  // the SUBACK
        try broker.publish("start 1", on: "t/fleet/command")
        #expect(heard.wait { heard.messages.map(\.text) == ["start 1"] })
        try broker.restart()
        #expect(heard.wait(seconds: 60) { heard.connections == 2 }, "\(heard.disconnections)")
        #expect(!heard.disconnections.isEmpty)
        usleep(200_000)
        try broker.publish("start 2", on: "t/fleet/command")
        #expect(heard.wait { heard.messages.map(\.text) == ["start 1", "start 2"] })
        client.stop()
    }

    @Test func aBrokerThatComesLater() throws {
        let broker = try MosquittoBroker()
        broker.stop()
        let heard = Heard()
        let client = try Self.client(broker, id: "rig-d", heard: heard)
        try client.start()
        #expect(heard.wait { !heard.disconnections.isEmpty })
        #expect(heard.connections == 0)
        try broker.start()
        #expect(heard.wait(seconds: 60) { heard.connections == 1 }, "\(heard.disconnections)")
        client.stop()
    }

    @Test func aLoginTheBrokerAsksFor() throws {
        let broker = try MosquittoBroker(login: .init(username: "rig", password: "s3cret"))
        let heard = Heard()
        let client = try Self.client(broker, id: "rig-e", heard: heard)
        try client.start()
        #expect(heard.wait { heard.connections == 1 })
        client.stop()

        let refused = Heard()
        var wrong = try BrokerAddress.parse(broker.url).get()
        wrong.password = "wrong"
        let intruder = try MQTTClient(options: MQTTClient.Options(broker: wrong, clientId: "rig-f")) {
            refused.record($0)
        }
        try intruder.start()
        #expect(refused.wait { !refused.disconnections.isEmpty })
        #expect(refused.connections == 0)
        #expect(refused.disconnections.first?.contains("not authorised") == true, "\(refused.disconnections)")
        intruder.stop()
    }

    @Test func tlsWithTheBrokersCA() throws {
        let broker = try MosquittoBroker(tls: true)
        let heard = Heard()
        let client = try Self.client(broker, id: "rig-g", heard: heard)
        try client.start()
        #expect(heard.wait { heard.connections == 1 }, "\(heard.disconnections)")
        try client.publish(MQTTClient.Message(topic: "t/tls", text: "over TLS", retain: true))
        #expect(try broker.firstMessage(on: "t/tls") == "over TLS")
        client.stop()

        // Without the CA, the system's CAs do not know the broker's: no connection.
        let refused = Heard()
        let stranger = try MQTTClient(
            options: MQTTClient.Options(broker: try BrokerAddress.parse(broker.url).get(), clientId: "rig-h")
        ) { refused.record($0) }
        try stranger.start()
        #expect(
            refused.wait { refused.errors.contains { $0.contains("certificate verify failed") } }, "\(refused.errors)")
        #expect(refused.connections == 0)
        stranger.stop()
    }

    @Test func aClientCertificateTheBrokerAsksFor() throws {
        let broker = try MosquittoBroker(tls: true, clientCertificates: true)
        let heard = Heard()
        var options = MQTTClient.Options(broker: try BrokerAddress.parse(broker.url).get(), clientId: "rig-i")
        options.caFile = broker.caFile
        options.certFile = broker.clientCertFile
        options.keyFile = broker.clientKeyFile
        let client = try MQTTClient(options: options) { heard.record($0) }
        try client.start()
        #expect(heard.wait { heard.connections == 1 }, "\(heard.errors) \(heard.disconnections)")
        try client.publish(MQTTClient.Message(topic: "t/cert", text: "with a certificate", retain: true))
        #expect(try broker.firstMessage(on: "t/cert") == "with a certificate")
        client.stop()

        // The same CA, no certificate: the broker ends the handshake.
        let refused = Heard()
        options.certFile = nil
        options.keyFile = nil
        options.clientId = "rig-j"
        let anonymous = try MQTTClient(options: options) { refused.record($0) }
        try anonymous.start()
        #expect(refused.wait { !refused.errors.isEmpty || !refused.disconnections.isEmpty })
        usleep(500_000)
        #expect(refused.connections == 0, "\(refused.errors) \(refused.disconnections)")
        anonymous.stop()
    }

    @Test func brokerAddresses() throws {
        #expect(try BrokerAddress.parse("mqtt://broker.local").get() == BrokerAddress(host: "broker.local"))
        #expect(try BrokerAddress.parse("mqtts://b:9000/").get() == BrokerAddress(host: "b", port: 9000, tls: true))
        #expect(try BrokerAddress.parse("mqtts://b").get().port == 8883)
        #expect(
            try BrokerAddress.parse("mqtt://rig:pa:ss@10.0.0.1:1884").get()
                == BrokerAddress(host: "10.0.0.1", port: 1884, username: "rig", password: "pa:ss"))
        #expect(try BrokerAddress.parse("mqtt://[::1]:1883").get().host == "::1")
        #expect(try BrokerAddress.parse("mqtt://u:p@h").get().description == "mqtt://u@h:1883")
        for bad in ["broker:1883", "http://b", "mqtt://", "mqtt://b:0", "mqtt://b:x", "mqtt://@b", "mqtt://[::1"] {
            #expect(throws: BrokerAddressError.self, "\(bad)") { try BrokerAddress.parse(bad).get() }
        }
    }
}
