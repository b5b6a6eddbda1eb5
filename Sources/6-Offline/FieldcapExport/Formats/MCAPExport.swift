import FieldcapCalibration
import FieldcapCore
import FieldcapFaces
import FieldcapSession
import SyncField

/// `fieldcap export --format mcap`: the session as one MCAP file with the ROS 2 profile, every
/// record in time order across the streams, stamped in UTC through the sync point:
///
/// - a camera on `/<id>/image_raw` (`sensor_msgs/msg/Image`, its raw bytes with their ROS
///   encoding) or `/<id>/image_raw/compressed` (`sensor_msgs/msg/CompressedImage`, MJPEG);
///   `/<id>/camera_info` beside it when the session has the camera's calibration;
/// - an IMU's accelerometer and gyroscope on `/<id>/imu` (`sensor_msgs/msg/Imu`), and every
///   other channel of a sensor stream on `/<id>/channels` (`fieldcap_msgs/msg/SensorChannels`);
/// - a GNSS receiver's fixes (gpsd) on `/<id>/fix` (`sensor_msgs/msg/NavSatFix`);
/// - a stream a program fed also on `/<id>/json`: each record's channels as it sent them (JSON,
///   with a JSON schema made from its first record), which Foxglove plots by name
///   (`/<id>/json.force[0]`); left out of a rosbag2 bag, whose topics are ROS types;
/// - metadata `fieldcap`: the sync point and the mapping back to `capture_ns`.
enum MCAPExport {
    struct Options {
        var compression: MCAPCompression = .zstd
        var chunkBytes = 4 << 20
        /// 16-bit cameras to write as depth (`16UC1`); Z16 cameras always are.
        var depthStreams: Set<String> = []
        var faces: FaceCover.Settings?
        /// Fed streams' `/<id>/json` channels (not in a rosbag2 bag: `ros2 bag` knows ROS types only).
        var feedsAsJSON = true
    }

    struct Summary {
        /// The writer's statistics.
        var messageCount: UInt64 = 0
        var firstNs: UInt64?
        var lastNs: UInt64 = 0
        /// Per topic, in the file's channel order: its type (a ROS type, or `json` for a fed
        /// stream's records) and how many messages it got.
        var topics: [(topic: String, type: String, count: Int)] = []
        /// Per camera whose faces were covered, the cover's report (JSON).
        var facesCovered: [String: String] = [:]
    }

    /// The QoS rosbag2 records a reliable, volatile publisher with, which `ros2 bag` and
    /// `rosbags` read back from each channel's metadata.
    static let offeredQoS = """
        - history: 3
          depth: 0
          reliability: 1
          durability: 2
          deadline:
            sec: 2147483647
            nsec: 4294967295
          lifespan:
            sec: 2147483647
            nsec: 4294967295
          liveliness: 1
          liveliness_lease_duration:
            sec: 2147483647
            nsec: 4294967295
          avoid_ros_namespace_conventions: false
        """

    /// The ROS image encoding of a raw format, and the bytes of one row.
    static func rawEncoding(_ format: VideoFormat, depth: Bool) -> (encoding: String, step: Int)? {
        switch format.pixelFormat {
        case .yuyv: return ("yuv422_yuy2", format.width * 2)
        case .grey: return ("mono8", format.width)
        case .y16: return (depth ? "16UC1" : "mono16", format.width * 2)
        case .z16: return ("16UC1", format.width * 2)
        case .nv12: return ("nv12", format.width)
        case .bayerBGGR, .bayerGBRG, .bayerGRBG, .bayerRGGB:
            return (format.pixelFormat.bayerPattern!.rosEncoding, format.width)
        case .mjpeg, .ffv1, .h264, .hevc, .fwht: return nil
        }
    }

    static func write(
        session: ExportSession, streams: [ExportSession.Stream], path: String, options: Options,
        calibration: [String: CameraCalibration] = [:], progress: (Int) -> Void, isCancelled: () -> Bool
    ) throws(ExportError) -> Summary {
        let writer = try MCAPWriter(
            path: path,
            options: .init(
                profile: "ros2", library: "fieldcap \(Sidecar.fieldcapVersion)", compression: options.compression,
                chunkBytes: options.chunkBytes))
        var summary = Summary()
        var schemaIds: [ROS2Schema: UInt16] = [:]
        func channel(_ topic: String, _ type: ROS2Schema) throws(ExportError) -> UInt16 {
            if schemaIds[type] == nil {
                schemaIds[type] = try writer.addSchema(
                    name: type.rawValue, encoding: "ros2msg", data: Array(type.text.utf8))
            }
            summary.topics.append((topic, type.rawValue, 0))
            return try writer.addChannel(
                topic: topic, messageEncoding: "cdr", schema: schemaIds[type]!,
                metadata: ["offered_qos_profiles": offeredQoS])
        }

        try writer.addMetadata(name: "fieldcap", metadata(session))

        var sources: [Source] = []
        for stream in streams {
            let name = topicName(stream.id)
            if let format = stream.format {
                let depth = stream.holdsDepth(options.depthStreams)
                let image =
                    format.pixelFormat == .mjpeg
                    ? try channel("/\(name)/image_raw/compressed", .compressedImage)
                    : try channel("/\(name)/image_raw", .image)
                let info = calibration[stream.id] != nil ? try channel("/\(name)/camera_info", .cameraInfo) : nil
                sources.append(
                    .camera(
                        try CameraReader(
                            session: session, stream: stream, coveringFaces: depth ? nil : options.faces),
                        format: format, depth: depth,
                        image: image, info: info))
            } else {
                let feedsAsJSON = stream.isFeed && options.feedsAsJSON
                let reader = try SensorReader(
                    session: session, stream: stream, keepingJSON: feedsAsJSON || stream.isGNSS)
                let layout = IMULayout(channels: reader.channels)
                var topics = SensorTopics()
                topics.imu = layout.isIMU ? try channel("/\(name)/imu", .imu) : nil
                // A GNSS stream's fixes change shape (no position without a fix): NavSatFix and
                // JSON carry them, not a list of channels fixed by the first.
                if !layout.others.isEmpty && !stream.isGNSS {
                    topics.channels = try channel("/\(name)/channels", .sensorChannels)
                }
                if stream.isGNSS { topics.fix = try channel("/\(name)/fix", .navSatFix) }
                if feedsAsJSON {
                    let first = try SensorReader(session: session, stream: stream, keepingJSON: true)
                    let schema = FeedJSONSchema.schema(
                        id: stream.id,
                        firstChannels: try first.next()?.channelsJSON.flatMap { JSONValue.parse(Array($0.utf8)) })
                    let schemaId = try writer.addSchema(
                        name: "fieldcap.feed.\(name)", encoding: "jsonschema", data: Array(schema.utf8))
                    summary.topics.append(("/\(name)/json", "json", 0))
                    topics.json = try writer.addChannel(
                        topic: "/\(name)/json", messageEncoding: "json", schema: schemaId, metadata: [:])
                }
                sources.append(.sensor(reader, layout: layout, topics: topics))
            }
        }
        var merge = try TimeOrder(sources: sources)
        defer { merge.cancel() }
        var written = 0
        func add(_ channel: UInt16, _ ns: UInt64, _ encode: (inout [UInt8]) -> Void) throws(ExportError) {
            // A channel's sequence numbers count its messages from 0 (channel ids are topic indexes).
            let number = summary.topics[Int(channel)].count
            try writer.addMessage(
                channel: channel, sequence: UInt32(number), logTime: ns, publishTime: ns, payload: encode)
            summary.topics[Int(channel)].count += 1
        }
        while let (index, record) = try merge.next() {
            if isCancelled() { throw ExportError(.cancelled, "stopped: nothing written") }
            let stream = sources[index]
            switch (stream, record) {
            case (.camera(_, let format, let depth, let image, let info), .frame(let frame)):
                let ns = session.wallClockNs(captureNs: frame.captureNs)
                let header = ROS2Messages.Header(stampNs: ns, frameId: stream.id)
                if let (encoding, step) = rawEncoding(format, depth: depth) {
                    try add(image, ns) { buffer in
                        frame.bytes.withUnsafeBytes { bytes in
                            ROS2Messages.image(
                                header, height: format.height, width: format.width, encoding: encoding, step: step,
                                data: bytes, into: &buffer)
                        }
                    }
                } else {
                    try add(image, ns) { buffer in
                        frame.bytes.withUnsafeBytes {
                            ROS2Messages.compressedImage(header, format: "jpeg", data: $0, into: &buffer)
                        }
                    }
                }
                if let info, let calibration = calibration[stream.id] {
                    try add(info, ns) {
                        ROS2Messages.cameraInfo(
                            header, height: format.height, width: format.width,
                            distortionModel: calibration.rosDistortionModel, d: calibration.rosDistortion,
                            k: calibration.cameraMatrix, into: &$0)
                    }
                }
                written += 1
                progress(written)
            case (.sensor(_, let layout, let topics), .sample(let sample)):
                let ns = session.wallClockNs(captureNs: sample.captureNs)
                let header = ROS2Messages.Header(stampNs: ns, frameId: stream.id)
                if let imu = topics.imu {
                    try add(imu, ns) {
                        ROS2Messages.imu(
                            header, angularVelocity: layout.gyroscope(sample.values),
                            linearAcceleration: layout.accelerometer(sample.values), into: &$0)
                    }
                }
                if let rest = topics.channels {
                    try add(rest, ns) {
                        ROS2Messages.sensorChannels(
                            header, names: layout.otherNames,
                            values: layout.others.map { sample.values[$0] ?? .nan }, into: &$0)
                    }
                }
                if let json = topics.json, let text = sample.channelsJSON {
                    try add(json, ns) { $0.append(contentsOf: text.utf8) }
                }
                if let fix = topics.fix, let text = sample.channelsJSON,
                    let channels = JSONValue.parse(Array(text.utf8))
                {
                    try add(fix, ns) { ROS2Messages.navSatFix(header, gpsd: channels, into: &$0) }
                }
            default: preconditionFailure("a record of the wrong kind for its stream")
            }
        }
        // What covering the faces did, per camera, for a reviewer (Foxglove lists the metadata).
        var faces: [String: String] = [:]
        for case .camera(let reader, _, _, _, _) in sources {
            if let report = reader.facesReport { faces[reader.stream.id] = report.json }
        }
        if !faces.isEmpty {
            try writer.addMetadata(name: "fieldcap.faces_covered", faces)
            summary.facesCovered = faces
        }
        try writer.finish()
        summary.messageCount = writer.messageCount
        summary.firstNs = writer.firstMessageTime
        summary.lastNs = writer.lastMessageTime
        return summary
    }

    /// The metadata record: where the times came from, so `capture_ns` can be recovered.
    static func metadata(_ session: ExportSession) -> [String: String] {
        [
            "host_id": session.syncPoint.hostId,
            "sync_point.monotonic_ns": String(session.syncPoint.monotonicNs),
            "sync_point.wall_clock_ns": String(session.syncPoint.wallClockNs),
            "time_mapping":
                "log_time, publish_time and header.stamp are UTC nanoseconds: capture_ns "
                + "(CLOCK_MONOTONIC_RAW) - sync_point.monotonic_ns + sync_point.wall_clock_ns",
            "source_session": session.directory,
            "fieldcap_version": Sidecar.fieldcapVersion,
        ]
    }

    /// A stream id as a ROS name part: letters, digits and `_`, not starting with a digit.
    static func topicName(_ id: String) -> String {
        var name = String(id.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "_" })
        if let first = name.first, first.isNumber { name = "_" + name }
        return name
    }

    /// A sensor stream's channels in the file, each nil when the stream has none of its kind.
    struct SensorTopics {
        var imu: UInt16?
        var channels: UInt16?
        var json: UInt16?
        var fix: UInt16?
    }

    enum Source {
        case camera(CameraReader, format: VideoFormat, depth: Bool, image: UInt16, info: UInt16?)
        case sensor(SensorReader, layout: IMULayout, topics: SensorTopics)

        var id: String {
            switch self {
            case .camera(let reader, _, _, _, _): reader.stream.id
            case .sensor(let reader, _, _): reader.stream.id
            }
        }
    }
}

/// A JSON schema for a fed stream's `/<id>/json` messages, read from its first record's shape:
/// objects with their members, arrays of their first element's kind, numbers. Foxglove offers
/// the fields it names when a plot's path is typed.
enum FeedJSONSchema {
    static func schema(id: String, firstChannels: JSONValue?) -> String {
        var document: [String: JSONValue] = [
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": .string("\(id): the channels a program fed, as it sent them (fieldcap --sensor feed:)"),
        ]
        let shape: [String: JSONValue] = firstChannels.map(shape) ?? ["type": "object"]
        document.merge(shape) { $1 }
        return JSONValue.object(document).compactText(escapingSlashes: false) ?? "{}"
    }

    private static func shape(_ value: JSONValue) -> [String: JSONValue] {
        switch value {
        case .object(let members):
            return ["type": "object", "properties": .object(members.mapValues { .object(shape($0)) })]
        case .array(let items):
            return ["type": "array", "items": .object(items.first.map(shape) ?? [:])]
        default:
            return ["type": "number"]
        }
    }
}
