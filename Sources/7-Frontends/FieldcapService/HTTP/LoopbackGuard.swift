import FoundationEssentials
import Glibc
import Hummingbird
import NIOHTTP1

/// Without a token (the service on loopback), the only thing between another site's page in the
/// rig's browser and the API: a cross-origin "simple request" (a form's POST) reaches loopback,
/// and DNS rebinding makes a hostile name resolve to 127.0.0.1. So a request whose `Host` is not
/// one of the rig's loopback names is refused (403) whatever it asks, and so is one a browser
/// sent from another origin (`Origin` not this rig's own: a page, a WebSocket). Clients that are
/// not browsers (curl, scripts) send no `Origin` and a loopback `Host`, and pass.
struct LoopbackGuard<Context: RequestContext>: RouterMiddleware {
    /// The names a loopback client reaches the rig by: `localhost`, `127.0.0.0/8`, `::1`, and
    /// the machine's own host name (and `.local`), each with any port.
    let names: Set<String>

    init(hostNames: [String] = LoopbackGuard.machineNames()) {
        names = Set(["localhost", "::1"] + hostNames.flatMap { [$0.lowercased(), "\($0.lowercased()).local"] })
    }

    static func machineNames() -> [String] {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return [] }
        let name = String(cString: buffer)
        return name.isEmpty ? [] : [name]
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        // HTTP/1's first Host becomes the request's authority; a second one stays a header.
        let refused = refusal(
            host: request.head.authority,
            secondHost: request.headers.contains(where: { $0.name.canonicalName == "host" }),
            origin: request.headers[.origin])
        if let refused { throw refused }
        return try await next(request, context)
    }

    /// The same checks, for a request head as NIO decodes it (a WebSocket request, before
    /// Hummingbird sees it: `RefusedUpgradesAnswered`).
    func admits(_ head: HTTPRequestHead) -> Bool {
        let hosts = head.headers["host"]
        return refusal(
            host: hosts.first, secondHost: hosts.count > 1,
            origin: head.headers["origin"].isEmpty ? nil : head.headers["origin"].joined(separator: ", "))
            == nil
    }

    /// Why a request with this `Host` (and a second one, or not) and `Origin` is refused, or nil.
    private func refusal(host: String?, secondHost: Bool, origin: String?) -> APIError? {
        if secondHost { return APIError(.badRequest, "more than one Host header: send one") }
        if let host, !allows(authority: host) {
            return APIError(
                .forbidden,
                "Host '\(host.printable)' is not this rig's: without a "
                    + "token it answers only to localhost, 127.0.0.1 or [::1]"
            )
        }
        if let origin, !sameOrigin(origin, host: host) {
            return APIError(
                .forbidden,
                "a page from '\(origin.printable)' cannot use this rig's API: "
                    + "open the rig's own page (http://\(host ?? "127.0.0.1:8080")/)"
            )
        }
        return nil
    }

    /// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT`, with HOST one of the rig's loopback names.
    func allows(authority: String) -> Bool {
        guard let name = Self.hostName(of: authority) else { return false }
        return names.contains(name) || Self.isLoopbackIPv4(name)
    }

    /// An `Origin` (`http://HOST:PORT`) is the rig's own when it names the host and port the
    /// request was sent to. `null` (a sandboxed frame, a file) is not.
    func sameOrigin(_ origin: String, host: String?) -> Bool {
        guard let host, origin.lowercased().hasPrefix("http://") else { return false }
        let authority = String(origin.dropFirst("http://".count))
        return authority.lowercased() == host.lowercased() && allows(authority: authority)
    }

    /// The host of an authority, lower case, without brackets or port; nil when malformed.
    static func hostName(of authority: String) -> String? {
        let text = authority.lowercased()
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            return String(text[text.index(after: text.startIndex)..<close])
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !parts[0].isEmpty else { return nil }
        if parts.count == 2 && (parts[1].isEmpty || !parts[1].allSatisfy(\.isNumber)) { return nil }
        return String(parts[0])
    }

    /// `127.a.b.c`, each part 0 to 255.
    static func isLoopbackIPv4(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
                && Int(part).map { $0 <= 255 } == true
        }
    }
}
