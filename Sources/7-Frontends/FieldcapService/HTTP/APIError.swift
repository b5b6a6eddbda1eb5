import FoundationEssentials
import Hummingbird
import NIOCore

/// A refused request: its HTTP status and one line that says what to do, sent as
/// `{"error":"..."}`. Thrown by handlers; nothing has been changed when one is.
struct APIError: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String
    /// Sent beside the JSON's own (a 405's `Allow`).
    var headers: HTTPFields

    init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = JSONBody.response(["error": message], status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}

/// The service's JSON: snake_case keys, sorted, slashes unescaped, as the rest of fieldcap writes it.
enum JSONBody {
    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Every value here is a plain struct of numbers and strings: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: encode(value))))
    }
}

/// Every error as `{"error":"..."}`: Hummingbird's own (an unknown path, a body too large) too,
/// so a client reads one shape whatever refused it.
struct JSONErrors<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HTTPError {
            // A path the API serves, asked with a method it does not take: 405 with what it
            // takes (RFC 9110 15.5.6), not "no such path" (schemathesis's unsupported_method, #42).
            if error.status == .notFound, let allowed = ServiceRoutes.methods(at: request.uri.path),
                !allowed.contains(request.method)
            {
                let list = (allowed.contains(.get) ? allowed + [.head] : allowed).map(\.rawValue)
                    .joined(separator: ", ")
                throw APIError(
                    .methodNotAllowed, "\(request.method) is not served at \(request.uri.path): it takes \(list)",
                    headers: [.allow: list])
            }
            throw APIError(
                error.status,
                error.status == .notFound
                    ? "no such path: \(request.method) \(request.uri.path) (see GET /api/v1/rig, or openapi.yaml)"
                    : error.body ?? error.status.reasonPhrase)
        } catch let error as NIOTooManyBytesError {
            // A body past what the endpoint collects (the start request's 64 KiB): Hummingbird's
            // own answer to it is an empty 413.
            throw APIError(
                .contentTooLarge,
                "the request's body is larger than "
                    + "\(error.maxBytes.map { "\($0) bytes" } ?? "this endpoint takes"): send less"
            )
        }
    }
}
