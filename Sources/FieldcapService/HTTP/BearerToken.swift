import Foundation
import Hummingbird

/// The token a client must send (`Authorization: Bearer TOKEN`) on every path but
/// `/api/health`, when the service listens beyond loopback (or is given a token file).
public struct BearerToken: Sendable {
    public let value: String

    public init(value: String) { self.value = value }

    /// Reads the token from `path`, or, when the file does not exist, makes one (32 random
    /// bytes as hex) and writes it with mode 0600, making the directory if needed.
    public static func load(path: String) throws -> (token: BearerToken, created: Bool) {
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.count >= 16 else {
                throw TokenFileError(
                    "--token-file \(path): holds \(text.count) characters; a token needs at least 16 (delete the file and one is made)"
                )
            }
            return (BearerToken(value: text), false)
        }
        var generator = SystemRandomNumberGenerator()
        let value = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            throw TokenFileError(
                "--token-file \(path): cannot create it: \(String(cString: strerror(errno))) (errno \(errno)); choose a writable path"
            )
        }
        defer { close(fd) }
        let line = Array((value + "\n").utf8)
        guard write(fd, line, line.count) == line.count, fsync(fd) == 0 else {
            throw TokenFileError("--token-file \(path): cannot write it: \(String(cString: strerror(errno)))")
        }
        return (BearerToken(value: value), true)
    }

    /// Whether `header` (an Authorization header's value) carries this token; compared in time
    /// that does not depend on where the first difference is.
    func accepts(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.dropFirst("Bearer ".count).utf8), expected = Array(value.utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

public struct TokenFileError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Refuses, with 401 and before any handler runs, a request without the token: nothing is read,
/// started or deleted for it. `/api/health` stays open, as rig servers poll it.
struct RequireToken<Context: RequestContext>: RouterMiddleware {
    let token: BearerToken?

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        guard let token, request.uri.path != "/api/health" else { return try await next(request, context) }
        guard token.accepts(request.headers[.authorization]) else {
            throw APIError(
                .unauthorized,
                "this rig needs its token: send 'Authorization: Bearer TOKEN' (the token is in the rig's --token-file)")
        }
        return try await next(request, context)
    }
}
