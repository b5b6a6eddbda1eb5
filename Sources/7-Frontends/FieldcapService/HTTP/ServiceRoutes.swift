import FieldcapArchive
import FieldcapCore
import FieldcapRig
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Hummingbird
import SyncField

/// The HTTP API (docs/service-and-web-page.md; openapi.yaml): health, the rig, recording control,
/// status, and the sessions under the root. Every request but `/api/health` needs the token when
/// the service has one; every name in a path is a session's name, never a path.
public struct ServiceRoutes: Sendable {
    public let rig: RigService
    public let token: BearerToken?

    public init(rig: RigService, token: BearerToken?) {
        self.rig = rig
        self.token = token
    }

    var root: String { rig.settings.root }

    public func router() -> Router<ServiceRequestContext> {
        // HEAD wherever GET is, answered as GET without the body (RFC 9110 9.3.2: monitoring
        // probes and `curl -I` use it); Hummingbird routes a method only where a route names it.
        let router = Router(context: ServiceRequestContext.self, options: .autoGenerateHeadEndpoints)
        add(to: router)
        return router
    }

    public func add(to router: Router<ServiceRequestContext>) {
        router.add(middleware: JSONErrors<ServiceRequestContext>())
        router.add(middleware: RequireToken<ServiceRequestContext>(token: token))
        if token == nil { router.add(middleware: LoopbackGuard<ServiceRequestContext>()) }
        router.get("/api/health") { _, _ in health() }
        router.get("/") { _, _ in page() }
        router.get("/index.html") { _, _ in page() }
        router.get("/api/v1/openapi.yaml") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml", .cacheControl: "no-cache"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_yaml)))
        }
        router.get("/api/v1/rig") { _, _ in rigBody() }
        router.get("/api/v1/status") { _, _ in JSONBody.response(StatusBody(rig.status)) }
        router.post("/api/v1/recording/start") { request, _ in
            let body = try await request.body.collect(upTo: 64 << 10)
            let directory = try await start(try StartBody.parse(Data(buffer: body)))
            return JSONBody.response(
                StartedBody(name: PathName.base(of: directory), directory: directory), status: .created)
        }
        router.post("/api/v1/recording/stop") { _, _ in
            do {
                return JSONBody.response(StoppedBody(try await rig.stop("stopped over the API")))
            } catch let refusal as RigService.Refusal {
                throw APIError(refusal)
            }
        }
        router.post("/api/v1/marks") { request, _ in
            let body = try await request.body.collect(upTo: 64 << 10)
            let asked = try MarkBody.parse(Data(buffer: body))
            switch await rig.markOffThePool(asked) {
            case .success(let taken):
                return JSONBody.response(
                    MarkedBody(
                        recording: PathName.base(of: rig.recordingDirectory ?? ""), mark: taken.mark,
                        warnings: taken.warnings), status: .created)
            case .failure(let refusal):
                throw APIError(refusal)
            }
        }
        router.get("/api/v1/marks") { _, _ in
            let current = rig.marks
            return JSONBody.response(
                MarksBody(recording: current.map { PathName.base(of: $0.directory) }, marks: current?.marks ?? []))
        }
        router.get("/api/v1/sessions") { _, _ in
            JSONBody.response(["sessions": try SessionCatalog.entries(root: root)])
        }
        router.get("/api/v1/sessions/{name}") { _, context in
            let name = try sessionName(context)
            return JSONBody.response(SessionBody(entry: try entry(name), files: files(name)))
        }
        router.delete("/api/v1/sessions/{name}") { _, context in
            let name = try sessionName(context)
            return try delete(name)
        }
        router.get("/api/v1/sessions/{name}/archive") { _, context in
            let name = try sessionName(context)
            let entry = try entry(name)
            if entry.state == .recording {
                throw APIError(.conflict, "\(name) is being recorded: stop it first, or extract a range of it")
            }
            return try TarResponse.directory(entry.path, name: name)
        }
        router.get("/api/v1/extract") { request, _ in try await extract(request) }
        // The WebSocket itself is EventsSocket's (upgrades never reach this router); a plain GET
        // lands here and is told what the path wants, not "no such path" (schemathesis, #42).
        router.get("/api/v1/events") { (_: Request, _: ServiceRequestContext) -> Response in
            throw APIError(
                .upgradeRequired,
                "/api/v1/events is a WebSocket: connect with a WebSocket "
                    + "client (Upgrade: websocket), as the web page does"
            )
        }
        // The WebSocket is LiveSamplesSocket's; a plain GET, an unknown stream or a bad rate
        // lands here.
        router.get("/api/v1/live/{stream}") { (request: Request, context: ServiceRequestContext) -> Response in
            let id = context.parameters.get("stream") ?? ""
            guard rig.live.taps[id] != nil else {
                throw APIError(
                    .notFound,
                    "no sensor stream '\(id.printable)': the rig's are \(rig.live.streams.filter { !$0.isFeed }.map(\.id)) (GET /api/v1/rig)"
                )
            }
            guard LiveSamplesSocket.rate(request.uri.queryParameters["max_rate"].map(String.init)) != nil else {
                throw APIError(.badRequest, "max_rate must be a number of samples a second from 1 to 10000")
            }
            throw APIError(
                .upgradeRequired,
                "/api/v1/live/\(id) is a WebSocket: connect with a WebSocket client (Upgrade: websocket), as the web page does"
            )
        }
        router.get("/api/v1/preview/{file}") { _, context in
            let (stream, kind) = try PreviewResponses.resolve(context.parameters.get("file") ?? "", in: rig.previews)
            switch kind {
            case .jpg: return try await PreviewResponses.snapshot(stream, problem: rig.previewProblem)
            case .mjpg: return PreviewResponses.motionJPEG(stream, channel: context.channel)
            }
        }
    }

    /// The methods `add(to:)` serves at `path`, or nil for a path it does not serve: what a
    /// 405's `Allow` lists (with HEAD wherever GET is: `router()` answers it). Keep it in step
    /// with `add(to:)`: Tests/Hostile/schemathesis.sh sends an undeclared method to every path
    /// openapi.yaml has and checks the `Allow` against it.
    static func methods(at path: String) -> [HTTPRequest.Method]? {
        let parts = path.split(separator: "/").map(String.init)
        let get: [HTTPRequest.Method] = [.get]
        switch parts.count {
        case 0: return get
        case 1: return parts[0] == "index.html" ? get : nil
        case 2: return parts == ["api", "health"] ? get : nil
        case 3 where parts[0] == "api" && parts[1] == "v1":
            if parts[2] == "marks" { return [.get, .post] }
            return ["openapi.yaml", "rig", "status", "sessions", "extract", "events"].contains(parts[2]) ? get : nil
        case 4 where parts[0] == "api" && parts[1] == "v1":
            switch parts[2] {
            case "recording": return ["start", "stop"].contains(parts[3]) ? [.post] : nil
            case "sessions": return [.get, .delete]
            case "preview", "live": return get
            default: return nil
            }
        case 5 where parts[0] == "api" && parts[1] == "v1" && parts[2] == "sessions" && parts[4] == "archive":
            return get
        default: return nil
        }
    }

    /// The web page (Web/index.html, in the binary): no data in it, so open without the token.
    func page() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-cache"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.index_html)))
    }

    func health() -> Response {
        JSONBody.response(
            HealthBody(
                status: "ok", timestamp: Sidecar.utc(Date()), uptime: Date().timeIntervalSince(rig.startedAt)))
    }

    func rigBody() -> Response {
        let catalog = (try? SessionCatalog.entries(root: root)) ?? []
        return JSONBody.response(
            RigBody(
                hostId: rig.settings.hostId, root: root, recording: rig.recordingDirectory,
                devices: rig.devices.map { DeviceBody($0, previews: rig.previews) },
                storage: StorageBody(
                    freeBytes: freeBytes(at: root), usedBytes: catalog.reduce(0) { $0 + $1.bytes },
                    maxStorageBytes: rig.settings.maxStorage?.bytes, minFreeBytes: rig.settings.minFree.bytes),
                settings: SettingsBody(
                    durationS: rig.settings.duration?.seconds, segmentS: rig.settings.segment?.seconds,
                    keepS: rig.settings.keep?.seconds, syncEveryS: rig.settings.syncEvery.seconds)))
    }

    func start(_ request: RigService.StartRequest) async throws -> String {
        do {
            return try await rig.start(request)
        } catch let refusal as RigService.Refusal {
            throw APIError(refusal)
        }
    }

    /// The `{name}` of the path, decoded and checked.
    func sessionName(_ context: some RequestContext) throws -> String {
        guard let raw = context.parameters.get("name"), let name = SessionName.decode(raw) else {
            throw APIError(.badRequest, "the session name is not valid percent-encoding")
        }
        if let problem = SessionName.problem(with: name) {
            throw APIError(.badRequest, "session name '\(name.printable)' \(problem)")
        }
        return name
    }

    func entry(_ name: String) throws -> CatalogEntry {
        var isDirectory = false
        let path = "\(root)/\(name)"
        guard !SessionCatalog.isSymbolicLink(path),
            FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory
        else {
            throw APIError(.notFound, "no session '\(name.printable)' on this rig (GET /api/v1/sessions lists them)")
        }
        return SessionCatalog.entry(directory: path, name: name)
    }

    func files(_ name: String) -> [FileBody] {
        var links: [String] = []
        let entries = (try? TarStream.entries(directory: "\(root)/\(name)", prefix: "", links: &links)) ?? []
        return entries.map { FileBody(name: String($0.name.dropFirst()), bytes: $0.size) }
    }

    func delete(_ name: String) throws -> Response {
        _ = try entry(name)
        let plan = SessionRemoval.plan(root: root, names: [name])
        if let refused = plan.refused.first {
            // A delete that raced another finds the session half gone, or gone.
            guard FileManager.default.fileExists(atPath: "\(root)/\(name)") else {
                throw APIError(.notFound, "no session '\(name.printable)' on this rig (deleted meanwhile)")
            }
            throw APIError(.conflict, refused.replacing(root, with: "the rig's root"))
        }
        var deleted: [String] = []
        do {
            try SessionRemoval.remove(plan.targets, reason: "DELETE /api/v1/sessions") { deleted.append($0) }
        } catch {
            // Two deletes of one session race: the one that lost finds it gone.
            guard FileManager.default.fileExists(atPath: "\(root)/\(name)") else {
                throw APIError(.notFound, "no session '\(name.printable)' on this rig (deleted meanwhile)")
            }
            // Foundation's error names absolute paths: the client gets what it can act on.
            throw APIError(
                .conflict,
                "\(name.printable) could not be deleted whole (a file in it could "
                    + "not be removed): GET /api/v1/sessions/\(name) shows what is left"
            )
        }
        return JSONBody.response(["deleted": name])
    }

    /// `?from=&to=` (UTC, as `fieldcap extract` takes them) and optionally `session=`: the range
    /// extracted into a scratch directory under the root, sent as one tar, then removed.
    func extract(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let fromText = query["from"].map(String.init), let toText = query["to"].map(String.init) else {
            throw APIError(.badRequest, "give the range: ?from=2026-11-24T10:00:00Z&to=2026-11-24T10:05:00Z")
        }
        guard let from = UTCTime.parse(fromText) else {
            throw APIError(.badRequest, "from '\(fromText.printable)' is not a UTC time like 2026-11-24T10:00:00Z")
        }
        guard let to = UTCTime.parse(toText) else {
            throw APIError(.badRequest, "to '\(toText.printable)' is not a UTC time like 2026-11-24T10:05:00Z")
        }
        guard from < to else { throw APIError(.badRequest, "from must be before to") }
        let source: CatalogEntry
        if let named = query["session"].map(String.init) {
            if let problem = SessionName.problem(with: named) {
                throw APIError(.badRequest, "session name '\(named.printable)' \(problem)")
            }
            source = try entry(named)
        } else {
            guard let newest = try SessionCatalog.newest(overlapping: from, to, root: root) else {
                throw APIError(.notFound, "nothing on this rig was recorded between \(fromText) and \(toText)")
            }
            source = newest
        }
        let scratch = "\(root)/.extract-\(UUID().uuidString)"
        let name = "\(source.name)-extract"
        // As `fieldcap extract` judges it: refused, failed (a video missing or unreadable) or not
        // valid, a 422 saying why, and nothing is sent or kept.
        do {
            let outcome = try RangeExtractor.extract(.init(source: source.path, fromNs: from, toNs: to, out: scratch))
            guard outcome.report.isValid else {
                try? FileManager.default.removeItem(atPath: scratch)
                throw APIError(
                    .unprocessableContent,
                    "the extract of \(source.name) does not validate (run `fieldcap validate` on it): "
                        + outcome.report.problems.prefix(3).map { "\($0)" }.joined(separator: "; ").replacing(
                            scratch, with: name))
            }
        } catch let error as APIError {
            throw error
        } catch let failure as RangeExtractor.Failure {
            try? FileManager.default.removeItem(atPath: scratch)
            throw APIError(.unprocessableContent, failure.message.replacing(scratch, with: name))
        } catch {
            try? FileManager.default.removeItem(atPath: scratch)
            throw APIError(
                .unprocessableContent,
                "\(source.name) cannot be extracted (run `fieldcap validate` on it): \(error)".replacing(
                    scratch, with: name))
        }
        let response = try TarResponse.directory(scratch, name: name) {
            try? FileManager.default.removeItem(atPath: scratch)
        }
        // HEAD: the answer GET gets, but its body, which is what removes the extract, never runs.
        if request.method == .head { try? FileManager.default.removeItem(atPath: scratch) }
        return response
    }
}

extension APIError {
    init(_ refusal: RigService.Refusal) {
        switch refusal.kind {
        case .badRequest: self.init(.badRequest, refusal.description)
        case .conflict: self.init(.conflict, refusal.description)
        case .unavailable: self.init(.serviceUnavailable, refusal.description)
        }
    }
}
