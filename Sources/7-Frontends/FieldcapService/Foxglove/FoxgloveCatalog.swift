import FieldcapCore
import FieldcapPreview
import FieldcapRig
import FoundationEssentials

/// What a rig offers a Foxglove client: each camera's preview as `foxglove.CompressedImage`,
/// each sensor stream (an IMU) as one message a sample, and the rig's status once a second; all
/// JSON with JSON schemas, which Foxglove decodes with nothing installed. The channels are fixed
/// for the life of the process: a recording that starts or stops changes what feeds them, not
/// what they are.
struct FoxgloveCatalog: Sendable {
    enum Source: Sendable {
        case preview(PreviewStream)
        case sensor(LiveSensors.Stream)
        case status
        case clock
    }

    struct Entry: Sendable {
        var channel: FoxgloveProtocol.Channel
        var source: Source
    }

    let entries: [UInt32: Entry]
    let channels: [FoxgloveProtocol.Channel]

    init(previews: Previews, sensors: [LiveSensors.Stream]) {
        var list: [Entry] = []
        func add(_ topic: String, _ schemaName: String, _ schema: String, _ source: Source) {
            let channel = FoxgloveProtocol.Channel(
                id: UInt32(list.count + 1), topic: topic, encoding: "json", schemaName: schemaName, schema: schema,
                schemaEncoding: "jsonschema")
            list.append(Entry(channel: channel, source: source))
        }
        for id in previews.cameraIds {
            guard let stream = previews.streams[id] else { continue }
            add("/\(id)/preview", "foxglove.CompressedImage", Self.compressedImageSchema, .preview(stream))
        }
        for sensor in sensors {
            if sensor.isFeed {
                add("/\(sensor.id)", "fieldcap.FeedRecord", Self.feedSchema, .sensor(sensor))
            } else {
                add("/\(sensor.id)", "fieldcap.Sample", Self.sampleSchema(sensor), .sensor(sensor))
            }
        }
        add("/fieldcap/status", "fieldcap.Status", Self.statusSchema, .status)
        add("/fieldcap/clock", "fieldcap.ClockHealth", Self.clockSchema, .clock)
        entries = Dictionary(uniqueKeysWithValues: list.map { ($0.channel.id, $0) })
        channels = list.map(\.channel)
    }

    /// foxglove/schemas' `foxglove.CompressedImage` (timestamp, frame_id, base64 data, format).
    static let compressedImageSchema = FoxgloveProtocol.text(
        .object([
            "title": "foxglove.CompressedImage", "type": "object",
            "properties": .object([
                "timestamp": timeSchema,
                "frame_id": .object(["type": "string"]),
                "data": .object(["type": "string", "contentEncoding": "base64"]),
                "format": .object(["type": "string"]),
            ]),
        ]))

    static let timeSchema: JSONValue = .object([
        "type": "object", "title": "time",
        "properties": .object([
            "sec": .object(["type": "integer", "minimum": 0]),
            "nsec": .object(["type": "integer", "minimum": 0, "maximum": 999_999_999]),
        ]),
    ])

    /// A sample: its UTC time, its `capture_ns` (CLOCK_MONOTONIC_RAW, as in the session), the
    /// device's count, and the channels' values by name (null for one that is not a number).
    static func sampleSchema(_ sensor: LiveSensors.Stream) -> String {
        var values: [String: JSONValue] = [:]
        for channel in sensor.channels { values[channel] = .object(["type": .array(["number", "null"])]) }
        return FoxgloveProtocol.text(
            .object([
                "title": .string("fieldcap.Sample (\(sensor.id))"), "type": "object",
                "properties": .object([
                    "timestamp": timeSchema,
                    "capture_ns": .object(["type": "integer"]),
                    "sequence": .object(["type": "integer"]),
                    "values": .object(["type": "object", "properties": .object(values)]),
                ]),
            ]))
    }

    /// A fed stream's record: its UTC time, `capture_ns`, the count, and its channels as the
    /// program sent them (while a recording runs: a feed's socket is open only then).
    static let feedSchema = FoxgloveProtocol.text(
        .object([
            "title": "fieldcap.FeedRecord", "type": "object",
            "properties": .object([
                "timestamp": timeSchema,
                "capture_ns": .object(["type": "integer"]),
                "sequence": .object(["type": "integer"]),
                "channels": .object(["type": "object"]),
            ]),
        ]))

    /// Each captured stream's device clock mapping into CLOCK_MONOTONIC_RAW (`ClockBody`), by id.
    static let clockSchema = FoxgloveProtocol.text(
        .object([
            "title": "fieldcap.ClockHealth", "type": "object",
            "properties": .object([
                "timestamp": timeSchema,
                "streams": .object([
                    "type": "object",
                    "additionalProperties": .object([
                        "type": "object",
                        "properties": .object([
                            "from": .object(["type": "string"]),
                            "offset_ns": .object(["type": "integer"]),
                            "bracket_ns": .object(["type": "integer"]),
                            "drift_ppm": .object(["type": .array(["number", "null"])]),
                            "worst_uncertainty_ns": .object(["type": "integer"]),
                            "pairs": .object(["type": "integer"]),
                            "pairs_refused": .object(["type": "integer"]),
                            "steps": .object(["type": "integer"]),
                            "rate_changes": .object(["type": "integer"]),
                            "age_s": .object(["type": "number"]),
                        ]),
                    ]),
                ]),
            ]),
        ]))

    /// The status as `GET /api/v1/status` answers it (openapi.yaml's `Status`).
    static let statusSchema = FoxgloveProtocol.text(
        .object([
            "title": "fieldcap.Status", "type": "object",
            "description": "What GET /api/v1/status answers: see the rig's /api/v1/openapi.yaml",
        ]))
}

/// The payloads of the catalog's channels.
enum FoxgloveMessages {
    /// A preview frame as `foxglove.CompressedImage`.
    static func compressedImage(_ frame: PreviewFrame, camera: String, utcNs: UInt64) -> [UInt8] {
        var text = "{\"timestamp\":"
        appendTime(utcNs, to: &text)
        text += ",\"frame_id\":"
        text += FoxgloveProtocol.text(.string(camera))
        text += ",\"format\":\"jpeg\",\"data\":\""
        text += Data(frame.jpeg).base64EncodedString()
        text += "\"}"
        return Array(text.utf8)
    }

    /// A sample: written by hand, as a 1 kHz IMU sends a thousand a second to each client.
    /// Numbers are Swift's shortest text that reads back as the same double.
    /// `keys`: each channel's name as JSON text (`sampleKeys`).
    static func sample(_ sample: LiveSample, keys: [String], utcNs: UInt64) -> [UInt8] {
        var text = "{\"timestamp\":"
        appendTime(utcNs, to: &text)
        text += ",\"capture_ns\":\(sample.captureNs),\"sequence\":\(sample.sequence),\"values\":{"
        for (index, key) in keys.enumerated() {
            if index > 0 { text += "," }
            text += key
            text += ":"
            let value = index < sample.values.count ? sample.values[index] : .nan
            text += value.isFinite ? "\(value)" : "null"
        }
        text += "}}"
        return Array(text.utf8)
    }

    /// A fed stream's record.
    static func feedRecord(_ sample: LiveSample, utcNs: UInt64) -> [UInt8] {
        var text = "{\"timestamp\":"
        appendTime(utcNs, to: &text)
        text += ",\"capture_ns\":\(sample.captureNs),\"sequence\":\(sample.sequence),\"channels\":"
        text += sample.fields.flatMap { $0.compactText(escapingSlashes: false) } ?? "{}"
        text += "}"
        return Array(text.utf8)
    }

    /// The channels' names as JSON strings, once for a subscription.
    static func sampleKeys(_ channels: [String]) -> [String] {
        channels.map { FoxgloveProtocol.text(.string($0)) }
    }

    private static func appendTime(_ ns: UInt64, to text: inout String) {
        text += "{\"sec\":\(ns / 1_000_000_000),\"nsec\":\(ns % 1_000_000_000)}"
    }
}
