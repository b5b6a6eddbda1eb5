import ArgumentParser
import FieldcapFleet

/// The broker and fleet options `serve` and `fleet` share.
struct FleetArguments: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The MQTT broker of the fleet (mosquitto or any MQTT 3.1.1 broker), "
                + "with USER:PASSWORD@ when it asks for a login; mqtts:// for TLS.",
            valueName: "mqtt[s]://[USER:PASSWORD@]HOST[:PORT]"))
    var mqtt: String?

    @Option(
        help: ArgumentHelp(
            "The fleet's name: its topics are under fieldcap/fleet/NAME/.", valueName: "NAME"))
    var fleet = "default"

    @Option(
        name: .customLong("mqtt-ca"),
        help: ArgumentHelp(
            "With mqtts://: the CA that signed the broker's certificate (default: the system's).", valueName: "FILE"))
    var caFile: String?

    @Option(
        name: .customLong("mqtt-cert"),
        help: ArgumentHelp(
            "With mqtts://: a client certificate, when the broker asks for one (with --mqtt-key).", valueName: "FILE"))
    var certFile: String?

    @Option(name: .customLong("mqtt-key"), help: ArgumentHelp("The client certificate's key.", valueName: "FILE"))
    var keyFile: String?

    @Flag(name: .customLong("mqtt-insecure"), help: "With mqtts://: do not check the broker's name in its certificate.")
    var insecure = false

    func validate() throws {
        if let problem = FleetTopics.problem(with: fleet) {
            throw ValidationError("--fleet '\(fleet)' cannot be used: \(problem)")
        }
        if let mqtt, case .failure(let error) = BrokerAddress.parse(mqtt) { throw ValidationError("--mqtt \(error)") }
        if (certFile == nil) != (keyFile == nil) { throw ValidationError("--mqtt-cert and --mqtt-key go together") }
    }

    /// The connection's options, with `clientId` (the member's is set by FleetMember).
    func options(clientId: String) throws -> MQTTClient.Options? {
        guard let mqtt else { return nil }
        var options = MQTTClient.Options(broker: try BrokerAddress.parse(mqtt).get(), clientId: clientId)
        options.caFile = caFile
        options.certFile = certFile
        options.keyFile = keyFile
        options.insecure = insecure
        return options
    }
}
