/// Why sessions cannot make a request to the SyncField service: each says what to do.
public enum SyncRequestError: Error, Equatable, CustomStringConvertible {
    case unreadableSession(String, String)
    case segmentedRecording(String)
    case sameHost(String, first: String, second: String)
    /// No session has a video with frames; `absent` names the cameras that recorded nothing.
    case noVideo(absent: [String] = [])
    case unknownPrimary(String, known: [String])
    case ambiguousPrimary(String, hosts: [String])
    case noSessions
    case commaInId(String)
    case noCaptureSessions(String, places: [String])

    public var description: String {
        switch self {
        case .unreadableSession(let directory, let why):
            "\(directory): \(why)"
        case .segmentedRecording(let directory):
            "\(directory) is a segmented recording, not a session: name one of "
                + "its segments, or cut the range you want with `fieldcap extract`"
        case .sameHost(let host, let first, let second):
            "\(first) and \(second) are both from host \(host): the "
                + "service aligns one session per host; request them separately"
        case .noVideo(let absent):
            "the sessions have no video stream"
                + (absent.isEmpty
                    ? "" : " with frames (\(absent.joined(separator: ", ")) recorded nothing: the device was away)")
                + ": the SyncField service aligns to a primary video, so there is nothing to align to"
        case .unknownPrimary(let id, let known):
            "--primary \(id): no video stream of that id; the videos are \(known.joined(separator: ", "))"
        case .ambiguousPrimary(let id, let hosts):
            "--primary \(id): hosts \(hosts.joined(separator: " and ")) both have a video \(id); name one as HOST/\(id)"
        case .noSessions:
            "name at least one session directory"
        case .noCaptureSessions(let id, let places):
            "no session of capture \(id) in \(places.joined(separator: ", ")): give "
                + "the sessions' directories or the directories that hold them (each rig's "
                + "root, copied here), where fieldcap.json has \"capture_id\": \"\(id)\""
        case .commaInId(let id):
            "stream \(id): the upload lists stream and host ids separated by commas, so an id "
                + "with a comma cannot be sent; use the volume-mounted request (`fieldcap request`)"
        }
    }
}
