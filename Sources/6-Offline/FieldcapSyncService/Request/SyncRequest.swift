import FoundationEssentials

/// Sessions from one or several rigs, to be aligned together by the SyncField service: one host
/// per session, exactly one primary video. Both of the service's modes are built from it, the
/// volume-mounted body (`body`) and the file upload (`UploadForm`).
public struct SyncRequest: Sendable {
    public var sessions: [SessionSource]
    /// The primary video: its session (an index into `sessions`) and stream id.
    public var primary: (session: Int, stream: String)

    /// - Parameter primary: a video stream id, or `HOST/ID` where several hosts have it; nil
    ///   for the first video (of the first session that has one, in recording order).
    public init(sessions: [SessionSource], primary: String? = nil) throws(SyncRequestError) {
        guard !sessions.isEmpty else { throw .noSessions }
        var seen: [String: String] = [:]
        for session in sessions {
            if let first = seen[session.hostId] {
                throw .sameHost(session.hostId, first: first, second: session.directory)
            }
            seen[session.hostId] = session.directory
        }
        let videos = sessions.enumerated().flatMap { index, session in
            session.streams.filter { $0.kind == .video }.map { (session: index, host: session.hostId, id: $0.id) }
        }
        guard let first = videos.first else { throw .noVideo(absent: sessions.flatMap(\.absentStreams)) }
        self.sessions = sessions
        guard let primary else {
            self.primary = (first.session, first.id)
            return
        }
        let parts = primary.split(separator: "/", maxSplits: 1).map(String.init)
        let matches =
            parts.count == 2
            ? videos.filter { $0.host == parts[0] && $0.id == parts[1] }
            : videos.filter { $0.id == primary }
        switch matches.count {
        case 1: self.primary = (matches[0].session, matches[0].id)
        case 0:
            let known = videos.map { sessions.count > 1 ? "\($0.host)/\($0.id)" : $0.id }
            throw .unknownPrimary(primary, known: known)
        default: throw .ambiguousPrimary(primary, hosts: matches.map(\.host))
        }
    }

    /// Stream ids that more than one host records: the service finds timestamps files by
    /// stream id in one `timestamps_dir`, so such a body may be ambiguous to it.
    public var sharedStreamIds: [String] {
        var hostsById: [String: Int] = [:]
        for session in sessions { for stream in session.streams { hostsById[stream.id, default: 0] += 1 } }
        return hostsById.filter { $0.value > 1 }.map(\.key).sorted()
    }

    /// The body of `POST /api/v1/sync` (volume-mounted mode), as the SDK README builds it.
    ///
    /// - Parameters:
    ///   - dataDirectory: where the service sees the sessions' files: `DIR/FILE` for one
    ///     session, `DIR/SESSION/FILE` for several (their files share names). nil: the files'
    ///     paths on this machine.
    ///   - timestampsDirectory: the body's `timestamps_dir`.
    public func body(dataDirectory: String?, timestampsDirectory: String) -> SyncRequestBody {
        let hosts = sessions.enumerated().map { index, session in
            SyncRequestBody.Host(
                hostId: session.hostId,
                streams: session.streams.map { stream in
                    var entry = SyncRequestBody.Stream(streamId: stream.id)
                    switch stream.kind {
                    case .sensor: entry.streamType = "sensor"
                    case .video:
                        entry.path = stream.videoFile.map { file in
                            guard let dataDirectory else { return Self.absolute(file) }
                            let name = URL(fileURLWithPath: file).lastPathComponent
                            let base = dataDirectory.hasSuffix("/") ? String(dataDirectory.dropLast()) : dataDirectory
                            return sessions.count == 1 ? "\(base)/\(name)" : "\(base)/\(session.name)/\(name)"
                        }
                        if index == primary.session && stream.id == primary.stream { entry.isPrimary = true }
                    }
                    return entry
                })
        }
        return SyncRequestBody(hosts: hosts, timestampsDir: timestampsDirectory)
    }

    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}

/// The JSON body of `POST /api/v1/sync`: `hosts[].host_id`, `hosts[].streams[]` (`stream_id`,
/// `path` for videos, `stream_type: "sensor"` for sensors, `is_primary` on one), `timestamps_dir`.
public struct SyncRequestBody: Codable, Equatable, Sendable {
    public struct Host: Codable, Equatable, Sendable {
        public var hostId: String
        public var streams: [Stream]

        enum CodingKeys: String, CodingKey {
            case hostId = "host_id"
            case streams
        }
    }

    public struct Stream: Codable, Equatable, Sendable {
        public var streamId: String
        public var path: String?
        public var streamType: String?
        public var isPrimary: Bool?

        public init(streamId: String, path: String? = nil, streamType: String? = nil, isPrimary: Bool? = nil) {
            self.streamId = streamId
            self.path = path
            self.streamType = streamType
            self.isPrimary = isPrimary
        }

        enum CodingKeys: String, CodingKey {
            case streamId = "stream_id"
            case path
            case streamType = "stream_type"
            case isPrimary = "is_primary"
        }
    }

    public var hosts: [Host]
    public var timestampsDir: String

    enum CodingKeys: String, CodingKey {
        case hosts
        case timestampsDir = "timestamps_dir"
    }

    /// Indented, keys sorted, slashes as they are: what `fieldcap request` prints.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Strings, booleans and arrays of them: nothing here can fail to encode.
        return String(decoding: try! encoder.encode(self), as: UTF8.self)
    }
}
