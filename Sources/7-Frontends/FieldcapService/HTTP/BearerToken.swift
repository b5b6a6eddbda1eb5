import FieldcapCore
import FieldcapSystem
import FoundationEssentials
import Glibc
import Hummingbird
import HummingbirdCore
import NIOHTTP1
import SyncField

/// The token a client must send (`Authorization: Bearer TOKEN`) on every path but
/// `/api/health`, when the service listens beyond loopback (or is given a token file).
public struct BearerToken: Sendable {
    public let value: String

    public init(value: String) { self.value = value }

    /// Reads the token from `path`, or, when the file does not exist, makes one (32 random
    /// bytes as hex) and writes it with mode 0600, making the directory if needed.
    public static func load(path: String) throws -> (token: BearerToken, created: Bool) {
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimming(\.isSpaceOrLineEnd)
            guard text.count >= 16 else {
                throw TokenFileError(
                    "--token-file \(path): holds \(text.count) characters; a "
                        + "token needs at least 16 (delete the file and one is made)"
                )
            }
            return (BearerToken(value: text), false)
        }
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in cFormat("%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let directory = PathName.directory(of: path)
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw TokenFileError(
                "--token-file \(path): cannot create it: \(String(cString: strerror(errno))) "
                    + "(errno \(errno)); choose a writable path"
            )
        }
        defer { close(fd) }
        let line = Array((value + "\n").utf8)
        guard SystemCall.retryingInterrupts({ write(fd, line, line.count) }) == line.count, fsync(fd) == 0 else {
            throw TokenFileError("--token-file \(path): cannot write it: \(String(cString: strerror(errno)))")
        }
        return (BearerToken(value: value), true)
    }

    /// Whether `header` (an Authorization header's value) carries this token; compared in time
    /// that does not depend on where the first difference is.
    func accepts(_ header: String?) -> Bool {
        // RFC 9110 11.1: the scheme is case-insensitive (`bearer`, `BEARER`), then spaces.
        guard let header, header.count > 7, header.prefix(6).lowercased() == "bearer", header.dropFirst(6).first == " "
        else { return false }
        return matches(String(header.dropFirst(6).drop { $0 == " " }))
    }

    /// Compares in constant time: how long a wrong token takes says nothing of the right one.
    func matches(_ given: String) -> Bool {
        let given = Array(given.utf8), expected = Array(value.utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// The name of the cookie the web page keeps the token in.
    static let cookieName = "fieldcap_token"

    /// Whether a request carries the token. The header always counts. A GET may also carry it
    /// as the `fieldcap_token` cookie (what a browser's `<img>` and WebSocket send, as they
    /// cannot send a header) or as `?token=` (for VLC or ffplay); a request that changes
    /// something (POST, DELETE) needs the header, which another site's page cannot make a
    /// browser send, so a cookie alone never starts or deletes anything.
    func accepts(_ request: Request) -> Bool {
        accepts(
            authorization: request.headers[.authorization],
            safeMethod: request.method == .get || request.method == .head,
            queryToken: request.uri.queryParameters["token"].map(String.init), cookies: request.headers[values: .cookie]
        )
    }

    /// The same, for a WebSocket upgrade as Hummingbird hands it over before routing (the
    /// Foxglove server's).
    func accepts(_ request: HTTPRequest) -> Bool {
        let authorization = request.headerFields[values: .authorization]
        return accepts(
            authorization: authorization.isEmpty ? nil : authorization.joined(separator: ", "),
            safeMethod: request.method == .get || request.method == .head,
            queryToken: URI(request.path ?? "").queryParameters["token"].map(String.init),
            cookies: request.headerFields[values: .cookie])
    }

    /// The same, for a request head as NIO decodes it (a WebSocket request, before Hummingbird
    /// sees it: `RefusedUpgradesAnswered`). The open paths pass, as `RequireToken` lets them.
    func admits(_ head: HTTPRequestHead) -> Bool {
        let uri = URI(head.uri)
        if RequireToken<BasicRequestContext>.open.contains(uri.path) { return true }
        return accepts(
            // Joined as Hummingbird joins a repeated field, so both read the same value.
            authorization: head.headers["authorization"].isEmpty
                ? nil : head.headers["authorization"].joined(separator: ", "),
            safeMethod: head.method == .GET || head.method == .HEAD,
            queryToken: uri.queryParameters["token"].map(String.init), cookies: head.headers["cookie"])
    }

    private func accepts(authorization: String?, safeMethod: Bool, queryToken: String?, cookies: [String]) -> Bool {
        if accepts(authorization) { return true }
        guard safeMethod else { return false }
        if let queryToken, matches(queryToken) { return true }
        for header in cookies {
            for cookie in header.split(separator: ";") {
                let pair = cookie.split(separator: "=", maxSplits: 1).map { $0.trimming(\.isSpace) }
                if pair.count == 2 && pair[0] == Self.cookieName && matches(pair[1]) { return true }
            }
        }
        return false
    }
}

// What `trimmingCharacters(in:)` did with `.whitespaces` and `.whitespacesAndNewlines` (it is
// full Foundation's): the ends trimmed scalar by scalar, as it trimmed them.
extension StringProtocol {
    fileprivate func trimming(_ isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        guard let first = unicodeScalars.firstIndex(where: { !isTrimmed($0) }),
            let last = unicodeScalars.lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: unicodeScalars[first...last])
        return String(trimmed)
    }
}

extension Unicode.Scalar {
    /// In `.whitespacesAndNewlines`: Unicode's White_Space, and the zero-width space Foundation adds.
    fileprivate var isSpaceOrLineEnd: Bool { properties.isWhitespace || value == 0x200B }

    /// In `.whitespaces`: those that do not end a line.
    fileprivate var isSpace: Bool {
        isSpaceOrLineEnd && !(0x0A...0x0D).contains(value) && ![0x85, 0x2028, 0x2029].contains(value)
    }
}

public struct TokenFileError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Refuses, with 401 and before any handler runs, a request without the token: nothing is read,
/// started or deleted for it. `/api/health` stays open, as rig servers poll it, and so do the
/// web page itself (`/`), which holds no data and asks for the token, and the API's description.
struct RequireToken<Context: RequestContext>: RouterMiddleware {
    let token: BearerToken?
    static var open: Set<String> { ["/api/health", "/", "/index.html", "/api/v1/openapi.yaml"] }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        guard let token, !Self.open.contains(request.uri.path) else { return try await next(request, context) }
        guard token.accepts(request) else {
            throw APIError(
                .unauthorized,
                "this rig needs its token: send 'Authorization: Bearer TOKEN' (the token is in the rig's --token-file)")
        }
        return try await next(request, context)
    }
}
