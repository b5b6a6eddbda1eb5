import AsyncHTTPClient
import FieldcapCore
import FieldcapNetworking
import FoundationEssentials
import NIOCore
import NIOFileSystem

/// `POST /api/v1/sync/upload` with AsyncHTTPClient: the sessions' files streamed from disk as a
/// multipart form, and the service's answer.
public struct SyncUploader: Sendable {
    public struct Answer: Sendable {
        public var status: Int
        public var reason: String
        public var body: String
    }

    public var service: String
    /// How long to try to connect: AsyncHTTPClient tries again (a refused connection too)
    /// until this runs out.
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
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: connectTimeout)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: form.contentType)
            request.headers.add(name: "User-Agent", value: "fieldcap")
            request.body = .stream(FormBody(form: form, sent: sent), length: .known(form.length))
            let answer: Answer
            do {
                let response = try await client.execute(request, timeout: .hours(24))
                let body = try await response.body.collect(upTo: 16 << 20)
                answer = Answer(
                    status: Int(response.status.code), reason: response.status.reasonPhrase,
                    body: String(buffer: body))
            } catch let error as HTTPClientError {
                throw SyncUploadError.unreachable(url, Self.describe(error))
            } catch let error as FormBodyError {
                throw error
            } catch let error as FileSystemError {
                throw SyncUploadError.unreadableFile(error.description)
            } catch {
                throw SyncUploadError.unreachable(url, ConnectionFailure.describe(error))
            }
            try await client.shutdown()
            return answer
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func describe(_ error: HTTPClientError) -> String {
        switch error {
        case .connectTimeout: "no connection within the time limit"
        case .remoteConnectionClosed: "the service closed the connection"
        case .readTimeout, .deadlineExceeded: "the service stopped answering"
        default: "\(error)"
        }
    }

    /// The service's error message: `detail`, `message` or `error` of a JSON answer (FastAPI
    /// and most JSON APIs), else the answer's text.
    public static func message(in answer: Answer) -> String {
        if let object = PlainJSON.object(answer.body.utf8) {
            for key in ["detail", "message", "error"] {
                if let text = object[key] as? String { return text }
                if let value = object[key], !(value is JSONNull), let text = PlainJSON.text(value) { return text }
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
    case unreadableFile(String)

    public var description: String {
        switch self {
        case .badURL(let url): "--to \(url): give the service's base URL, like http://HOST:8080"
        case .unreachable(let url, let why): "cannot reach the SyncField service at \(url): \(why)"
        case .unreadableFile(let why): "a session's file could not be read: \(why)"
        }
    }
}
