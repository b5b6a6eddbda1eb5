import FieldcapSegments
import FieldcapSession
import FoundationEssentials

/// What `fieldcap mark` and a recording's marks socket (`MarkListener`) say to each other: one JSON
/// line each way. The request: `{"label": "...", "note": "...", "before": 30, "after": 60}` (the
/// windows in seconds, each optional). The answer: `{"mark": {...}, "warnings": [...]}`, or
/// `{"error": "...", "refusal": "bad_request" | "conflict"}`.
public enum MarkWire {
    /// The longest request line taken.
    public static let maxRequestBytes = 16 * 1024

    struct Request: Codable {
        var label: String
        var note: String?
        var before: Double?
        var after: Double?
    }

    public struct Answer: Codable, Sendable {
        public var mark: Mark?
        public var warnings: [String]?
        public var error: String?
        public var refusal: String?
    }

    /// The request line for `request` (its source is the socket's to say).
    public static func requestLine(_ request: MarkRequest) -> [UInt8] {
        line(
            Request(
                label: request.label, note: request.note, before: request.beforeSeconds, after: request.afterSeconds))
    }

    /// The request a line holds, marked as coming from `source`; a refusal naming what is wrong.
    public static func request(from line: [UInt8], source: String) throws(MarkRefusal) -> MarkRequest {
        let decoded: Request
        do { decoded = try JSONDecoder().decode(Request.self, from: Data(line)) } catch {
            throw MarkRefusal(
                .badRequest,
                "not a mark request: a JSON object with a string \"label\" and optional \"note\", "
                    + "\"before\" and \"after\" (seconds) was expected")
        }
        return MarkRequest(
            label: decoded.label, note: decoded.note, source: source, beforeSeconds: decoded.before,
            afterSeconds: decoded.after)
    }

    public static func answerLine(_ result: Result<(mark: Mark, warnings: [String]), MarkRefusal>) -> [UInt8] {
        switch result {
        case .success(let taken): line(Answer(mark: taken.mark, warnings: taken.warnings))
        case .failure(let refusal):
            line(Answer(error: refusal.message, refusal: refusal.kind == .badRequest ? "bad_request" : "conflict"))
        }
    }

    public static func answer(from line: [UInt8]) -> Answer? {
        try? JSONDecoder().decode(Answer.self, from: Data(line))
    }

    static func line<Value: Encodable>(_ value: Value) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var bytes = [UInt8]((try? encoder.encode(value)) ?? Data("{}".utf8))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
