import FieldcapCore
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials

/// `POST /api/v1/marks`'s body: `label`, and optionally `note`, `before` and `after` (seconds, or
/// a duration like `"30s"`).
enum MarkBody {
    static let keys: Set<String> = ["label", "note", "before", "after"]

    static func parse(_ data: Data) throws -> MarkRequest {
        guard let object = try? JSONDecoder().decode([String: StartBody.Value].self, from: data) else {
            throw APIError(.badRequest, "the body must be a JSON object, like {\"label\":\"near-miss\"}")
        }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw APIError(
                .badRequest,
                "unknown field '\(unknown.printable)': a mark takes \(keys.sorted().joined(separator: ", "))")
        }
        guard case .text(let label) = object["label"] else {
            throw APIError(.badRequest, "label must be a string: what happened (near-miss, grasp-failed)")
        }
        var note: String?
        switch object["note"] {
        case nil: break
        case .text(let text): note = text
        default: throw APIError(.badRequest, "note must be a string")
        }
        let request = MarkRequest(
            label: label, note: note, source: "api", beforeSeconds: try window(object["before"], "before"),
            afterSeconds: try window(object["after"], "after"))
        do { try request.validate() } catch { throw APIError(.badRequest, error.message) }
        return request
    }

    /// A window's seconds: 0 to a day, as a number or a duration.
    private static func window(_ value: StartBody.Value?, _ name: String) throws -> Double? {
        switch value {
        case nil: return nil
        case .number(let seconds) where seconds >= 0 && seconds <= MarkRequest.maxWindowSeconds:
            return seconds
        case .text(let text):
            if let span = TimeSpan(text, maximumSeconds: MarkRequest.maxWindowSeconds) { return span.seconds }
            fallthrough
        default:
            throw APIError(.badRequest, "\(name) must be seconds from 0 to 86400 or a duration like \"30s\"")
        }
    }
}

/// A mark taken: the mark as the recording keeps it, and what the user should hear about it.
struct MarkedBody: Encodable {
    var recording: String
    var mark: Mark
    var warnings: [String]
}

/// `GET /api/v1/marks`: the recording running's marks (none when idle).
struct MarksBody: Encodable {
    var recording: String?
    var marks: [Mark]
}

extension APIError {
    init(_ refusal: MarkRefusal) {
        switch refusal.kind {
        case .badRequest: self.init(.badRequest, refusal.message)
        case .conflict: self.init(.conflict, refusal.message)
        }
    }
}
