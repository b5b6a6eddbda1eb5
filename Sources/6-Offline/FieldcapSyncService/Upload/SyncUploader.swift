import FieldcapCore
import FieldcapNetworking
import FoundationEssentials
import NIOCore

/// `POST /api/v1/sync/upload`: the sessions' files streamed from disk as a multipart form, and
/// the service's answer.
public struct SyncUploader: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var reason: String
        public var body: String
    }

    public var service: String
    /// How long to try to connect: a refused connection is tried again until this runs out.
    public var connectTimeout: TimeAmount = .seconds(5)

    /// - Parameter service: the service's base URL, `http://HOST:8080`.
    public init(service: String) { self.service = service }

    /// The upload's URL, or an error naming what is wrong with `service`.
    public func endpoint() throws(SyncUploadError) -> String {
        guard let url = URL(string: service), let scheme = url.scheme?.lowercased(),
            ["http", "https"].contains(scheme),
            url.host != nil
        else { throw .badURL(service) }
        let base = service.hasSuffix("/") ? String(service.dropLast()) : service
        return base + "/api/v1/sync/upload"
    }

    /// Sends `form`; `sent` counts the bytes as they go. Any HTTP status is an answer; only
    /// failing to reach the service, or losing it part-way, throws.
    public func upload(_ form: MultipartForm, sent: FormBody.Progress = FormBody.Progress()) async throws -> Answer {
        let url = try endpoint()
        let sender = HTTPRequestSender(connectTimeout: connectTimeout, deadline: .hours(24))
        do {
            let answer = try await sender.send(
                method: .POST, to: try HTTPRequestSender.Endpoint(url: url),
                headers: [("Content-Type", form.contentType), ("User-Agent", "fieldcap")],
                body: FormBody(form: form, sent: sent), length: form.length)
            return Answer(status: answer.status, reason: answer.reason, body: String(buffer: answer.body))
        } catch let error as HTTPRequestSender.Failure {
            throw SyncUploadError.unreachable(url, error.description)
        }
    }

    /// The service's error message: `detail`, `message` or `error` of a JSON answer (FastAPI
    /// and most JSON APIs), else the answer's text.
    public static func message(in answer: Answer) -> String {
        if let object = JSONValue.parse(answer.body.utf8)?.objectValue {
            for key in ["detail", "message", "error"] {
                if let text = object[key]?.stringValue { return text }
                if let value = object[key], !value.isNull, let text = value.compactText() { return text }
            }
        }
        let text = String(answer.body.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        if text.isEmpty { return "(no message)" }
        return text.count > 500 ? String(text.prefix(500)) + "…" : text
    }
}

public enum SyncUploadError: Error, Equatable, CustomStringConvertible {
    case badURL(String)
    case unreachable(String, String)

    public var description: String {
        switch self {
        case .badURL(let url): "--to \(url): give the service's base URL, like http://HOST:8080"
        case .unreachable(let url, let why): "cannot reach the SyncField service at \(url): \(why)"
        }
    }
}
