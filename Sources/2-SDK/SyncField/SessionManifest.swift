/// `manifest.json`: every stream of a run and its files, built the way the SDK builds it.
public struct SessionManifest: Equatable, Sendable {
    public struct Stream: Equatable, Sendable {
        /// `"sensor"` for a stream that was `record()`ed, `"video"` for every other.
        public var type: String
        public var timestampsPath: String?
        public var frameCount: Int?
        public var sensorPath: String?
        /// The path given to `link()`.
        public var path: String?
    }

    public var hostId: String
    public var streams: [String: Stream]

    /// The SDK's construction: ids are the union of stamped, recorded and linked ids; a recorded
    /// stream is a sensor with `sensor_path`; `timestamps_path` and `frame_count` appear when the
    /// stream has a timestamps file; `path` when it was linked.
    ///
    /// - Parameters:
    ///   - timestampCounts: lines in `{id}.timestamps.jsonl`, for each stream that has that file.
    ///   - recorded: the streams that have a `{id}.jsonl` sensor file.
    ///   - links: paths given to `link()`.
    public init(hostId: String, timestampCounts: [String: Int], recorded: Set<String>, links: [String: String]) {
        self.hostId = hostId
        var streams: [String: Stream] = [:]
        for id in Set(timestampCounts.keys).union(recorded).union(links.keys) {
            let isSensor = recorded.contains(id)
            streams[id] = Stream(
                type: isSensor ? "sensor" : "video",
                timestampsPath: timestampCounts[id] == nil ? nil : SyncFieldFiles.timestamps(id),
                frameCount: timestampCounts[id],
                sensorPath: isSensor ? SyncFieldFiles.sensor(id) : nil,
                path: links[id])
        }
        self.streams = streams
    }

    var jsonValue: PrettyJSONValue {
        var streamValues: [String: PrettyJSONValue] = [:]
        for (id, stream) in streams {
            var fields: [String: PrettyJSONValue] = ["type": .string(stream.type)]
            if let sensorPath = stream.sensorPath { fields["sensor_path"] = .string(sensorPath) }
            if let timestampsPath = stream.timestampsPath { fields["timestamps_path"] = .string(timestampsPath) }
            if let frameCount = stream.frameCount { fields["frame_count"] = .integer(Int64(frameCount)) }
            if let path = stream.path { fields["path"] = .string(path) }
            streamValues[id] = .object(fields)
        }
        return .object([
            "host_id": .string(hostId),
            "sdk_version": .string(syncFieldVersion),
            "streams": .object(streamValues),
        ])
    }
}
