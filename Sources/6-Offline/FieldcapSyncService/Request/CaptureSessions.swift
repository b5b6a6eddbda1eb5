import FieldcapSession
import FoundationEssentials

/// The sessions of one capture across rigs (`capture_id` in their sidecars), gathered from
/// where the rigs' sessions were copied to: each place is a session, or a directory of them
/// (a rig's root). Segmented recordings are not sessions (the service takes one session per
/// host) and are passed over, as is anything without a sidecar.
public enum CaptureSessions {
    /// The session directories of `captureId` under `places`, sorted; none is an error.
    public static func find(captureId: String, in places: [String]) throws(SyncRequestError) -> [String] {
        var found: [String] = []
        for place in places {
            let place = place.count > 1 && place.hasSuffix("/") ? String(place.dropLast()) : place
            if let id = Self.captureId(of: place) {
                if id == captureId { found.append(place) }
                continue
            }
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: place) else {
                throw .unreadableSession(place, "no such directory")
            }
            for name in names.sorted() where Self.captureId(of: "\(place)/\(name)") == captureId {
                found.append("\(place)/\(name)")
            }
        }
        guard !found.isEmpty else { throw .noCaptureSessions(captureId, places: places) }
        return found
    }

    private static func captureId(of directory: String) -> String? {
        Sidecar.Contents(layout: SessionLayout(directory: directory))?.captureId
    }
}
