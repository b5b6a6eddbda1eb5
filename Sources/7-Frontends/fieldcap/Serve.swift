import ArgumentParser
import FieldcapCaptureServer
import FieldcapClockQuality
import FieldcapCore
import FieldcapFaces
import FieldcapFleet
import FieldcapPreview
import FieldcapRig
import FieldcapService
import FieldcapSession
import FieldcapSyncCheck
import FieldcapSystem
import FoundationEssentials
import Glibc
import Logging
import SyncField

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the rig as a service: record on command over HTTP, with status and events.",
        discussion: """
            Opens the rig's devices as --config (or --cam/--imu) describes them, checks that \
            each one works, and waits for commands: one recording at a time, with everything \
            `fieldcap record` does (segments, storage budget, sidecar; `fieldcap recover` after \
            a crash). SIGTERM or Ctrl-C finishes a recording in progress, then exits.

            The API (JSON; docs/service-and-web-page.md lists every field):
              GET  /api/health                  status, timestamp, uptime; open to all
              GET  /api/v1/rig                  devices, what they were granted, storage
              POST /api/v1/recording/start      optional: {"duration":"10s","check_sync":true}
              POST /api/v1/recording/stop
              GET  /api/v1/status               the status line's figures
              GET  /api/v1/sessions             and GET or DELETE /api/v1/sessions/NAME
              GET  /api/v1/sessions/NAME/archive   the session as one tar
              GET  /api/v1/extract?from=UTC&to=UTC a wall-clock range as one tar
              GET  /api/v1/events               WebSocket: status each second, events
              GET  /api/v1/preview/CAM.jpg      a camera's latest frame as a JPEG
              GET  /api/v1/preview/CAM.mjpg     its live preview (MJPEG: a browser's
                                                <img>, VLC, ffplay)
              GET  /api/v1/live/IMU             WebSocket: an IMU's samples, live

            The previews cost nothing while nobody watches; watched, each encodes at most \
            --preview-rate frames a second, from the recording's frames when one runs, else \
            from the cameras opened for it. SCMF v1 (the SimulatorCamera protocol) sends one \
            camera's preview over TCP, on 127.0.0.1:9876 unless --scmf says otherwise.

            The web page is at http://127.0.0.1:8080/: previews, each IMU's live plot, status, \
            start and stop, the sessions with download and delete.

            With --foxglove 127.0.0.1:8765 the rig is live in Foxglove (Open connection, \
            Foxglove WebSocket, ws://HOST:8765): each camera's preview \
            (foxglove.CompressedImage), each IMU's samples at full rate (or \
            --foxglove-max-rate), the status and each device clock's mapping once a second, \
            whether or not a recording runs. A client that cannot keep up loses whole \
            messages; the capture never waits for it.

            With --check-sync (or a start's "check_sync":true) each recording is checked once \
            it has stopped, as `fieldcap check-sync --save` does (a segmented one: its first \
            segment still on disk), one at a time on a thread at the lowest CPU priority: the \
            camera–IMU offsets go into its fieldcap.json, the event sync_checked tells them, \
            and the sessions (API, page, `fieldcap sessions`) show them. Wave the rig by hand \
            in the recording's first minute (its first segment). A check not begun when \
            fieldcap shuts down is told as not done.

            With --server ws://HOST:PORT (or auto: the first _allspark._tcp server DNS-SD \
            finds, wss:// tried before ws://) it also keeps a WebSocket connection to an \
            AllSpark capture server (reconnecting every 5 s, each attempt given 10 s): it \
            sends its --name, takes the server's clientConfig as the segment length and \
            budget of the recordings the server starts with {"command":"record"} (they run \
            until stopped: the protocol has no stop), sends chunkSaved as each segment \
            closes, and uploads a wall-clock range on uploadTimeRange, and every finished \
            segment the server has not stored on {"command":"upload"} (its Force Sync \
            Uploads), as tars of the extracted session named NAME_UNIXSECONDS.tar, each \
            message under the server's 300M limit. Commands are not answered on the socket: \
            the status shows them (server.last_command).

            SIGTERM or Ctrl-C finishes the recording first, before any client or listener \
            is stopped; no peer (capture server, MQTT broker, HTTP client) keeps it going.

            With --mqtt mqtt://BROKER:1883 [--fleet NAME] it is a rig of a fleet: it publishes \
            its presence (retained; the broker's will says offline if the rig vanishes) and its \
            status on fieldcap/fleet/NAME/rigs/HOST/..., and follows the fleet's commands \
            (`fieldcap fleet start|stop`, or any MQTT client): every rig starts at one shared \
            instant of its own wall clock with one capture id in its sidecar, and stops the \
            same way. A rig that gets a start after its instant says so (missed) and stays out.

            It listens on 127.0.0.1:8080 unless --listen says otherwise. On any other address \
            every request but /api/health and the page needs the token, sent as \
            'Authorization: Bearer TOKEN' (the page: open it once as /?token=TOKEN); it is \
            read from --token-file, made (0600) on first start if absent.

              fieldcap serve --config rig.yaml --listen 0.0.0.0:8080 \\
                --token-file /var/lib/fieldcap/token
              TOKEN=$(cat /var/lib/fieldcap/token)
              curl -H "Authorization: Bearer $TOKEN" -X POST -d '{"duration":"30s"}' \\
                http://rig:8080/api/v1/recording/start
            """
    )

    @OptionGroup var devices: DeviceArguments

    @OptionGroup var markGPIO: MarkGPIOOption

    @Option(
        help: ArgumentHelp(
            "The rig's YAML file (`fieldcap check --help` shows the format); options given here win over the file's.",
            valueName: "FILE"))
    var config: String?

    @Option(
        help: ArgumentHelp(
            "Where to listen: 127.0.0.1:8080 (the default), "
                + "0.0.0.0:8080 for every address (needs a token), [::1]:8080.",
            valueName: "ADDR:PORT"))
    var listen = "127.0.0.1:8080"

    @Option(
        help: ArgumentHelp(
            "The file holding the API token, made (0600) if absent. Needed to listen "
                + "beyond loopback; on loopback, given, it is required too (default: "
                + "$XDG_CONFIG_HOME/fieldcap/token or ~/.config/fieldcap/token when needed).",
            valueName: "FILE"))
    var tokenFile: String?

    @Option(
        help: ArgumentHelp(
            "Where sessions go (default: the config's output, $FIELDCAP_ROOT, else ./sessions).", valueName: "DIR"))
    var root: String?

    @Option(help: ArgumentHelp("The host id: clock_domain of every line (default: the hostname).", valueName: "ID"))
    var hostId: String?

    @Option(
        help: ArgumentHelp(
            "Stop cleanly when the disk's free space falls below this (default 256M).", valueName: "SIZE"))
    var minFree: ByteSize?

    @Option(
        help: ArgumentHelp(
            "Each recording in segments this long, unless its request says otherwise.", valueName: "DURATION"))
    var segment: Duration?

    @Option(help: ArgumentHelp("With segments: the storage budget of each recording (16G).", valueName: "SIZE"))
    var maxStorage: ByteSize?

    @Option(help: ArgumentHelp("With segments: delete finished segments older than this (2h).", valueName: "DURATION"))
    var keep: Duration?

    @Option(help: wallClockHelp)
    var wallClock: ClockQualityReader.Source = .auto

    @Flag(help: "Write the videos through the page cache (see `fieldcap record --help`).")
    var noDirectIO = false

    @Flag(
        help: ArgumentHelp(
            "After each recording, measure each camera–IMU offset into its fieldcap.json "
                + "(`fieldcap check-sync --save`); a start's check_sync says otherwise."))
    var checkSync = false

    @Option(help: ArgumentHelp("The most frames a second each camera's preview encodes (10).", valueName: "FPS"))
    var previewRate = 10.0

    @Option(help: ArgumentHelp("The previews' JPEG quality, 1 to 100 (80).", valueName: "Q"))
    var previewQuality = 80

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "Cover the faces in every preview (pixelated, as `export --blur-faces`; the default when the "
                + "config's preview_blur_faces is true; --no-preview-blur-faces shows them as captured); a camera "
                + "whose faces cannot be covered has no preview."))
    var previewBlurFaces: Bool?

    @Option(
        help: ArgumentHelp(
            "Where SCMF v1 clients get a camera's preview (TCP, no token: "
                + "keep it on loopback unless the network is yours), or 'off'.",
            valueName: "ADDR:PORT"))
    var scmf = "127.0.0.1:\(SCMFServer.defaultPort)"

    @Option(help: ArgumentHelp("The camera SCMF sends (default: the first with a preview).", valueName: "ID"))
    var scmfStream: String?

    @Option(
        help: ArgumentHelp(
            "Serve the rig live to Foxglove (its Foxglove WebSocket connection: each camera's preview, each IMU's "
                + "samples, the status) on ADDR:PORT, e.g. 127.0.0.1:8765; beyond loopback it needs the token, "
                + "which Foxglove gives as ws://HOST:PORT/?token=TOKEN. Off unless given.",
            valueName: "ADDR:PORT"))
    var foxglove: String?

    @Option(
        help: ArgumentHelp(
            "Messages a second each IMU sends a Foxglove client at most (default: every sample). "
                + "The recording keeps every sample whatever this says.",
            valueName: "HZ"))
    var foxgloveMaxRate: Double?

    @Flag(
        help:
            """
            Do not announce the rig on the local network (DNS-SD through avahi-daemon, \
            _fieldcap._tcp); it is announced when it listens beyond loopback.
            """
    )
    var noAnnounce = false

    @Option(
        help: ArgumentHelp(
            "An AllSpark-style capture server to keep a WebSocket connection to, and follow "
                + "(clientConfig, record, uploadTimeRange); auto: the first _allspark._tcp server DNS-SD finds.",
            valueName: "ws://HOST:PORT|auto"))
    var server: String?

    @Flag(help: "With a wss:// --server: do not check its certificate (a self-signed test server).")
    var insecure = false

    @Option(help: ArgumentHelp("The name the rig gives the capture server (default: its host id).", valueName: "NAME"))
    var name: String?

    @Flag(
        inversion: .prefixedNo,
        help: ArgumentHelp(
            "With --server: cover the faces in every video uploaded (as `export --blur-faces`; the default "
                + "when the config's upload_blur_faces is true); a camera whose faces cannot be covered is "
                + "left out of the upload, never sent as recorded."))
    var blurFaces: Bool?

    @Option(
        help: ArgumentHelp(
            "The capture server's largest message (300M: AllSpark's limit); a larger "
                + "upload is split by segment, and a segment alone over it is not sent.",
            valueName: "SIZE"))
    var serverMaxMessage: ByteSize?

    @Option(
        name: .customLong("idle-timeout"),
        help: ArgumentHelp(
            "How long an HTTP connection may stay without a request in progress (one "
                + "that sends nothing, half a request or garbage) before it is closed.",
            valueName: "DURATION"))
    var idleTimeout = TimeSpan(seconds: 15)

    @Option(
        name: .customLong("max-connections"),
        help: ArgumentHelp(
            "HTTP connections served at once; more wait to be accepted (default: a quarter of the "
                + "descriptor limit, at most 512, so a flood of them cannot take the files a recording opens).",
            valueName: "N"))
    var maxConnections: Int?

    @OptionGroup(title: "Fleet (many rigs, one capture, over MQTT)") var fleet: FleetArguments

    @Option(
        name: .customLong("fleet-horizon"),
        help: ArgumentHelp(
            "How far ahead a fleet's start or stop instant may be; one further "
                + "ahead is refused (the rig would wait for it with its devices open).",
            valueName: "DURATION"))
    var fleetHorizon = TimeSpan(seconds: 600)

    /// `HOST:PORT` or `[V6]:PORT`.
    static func parseListen(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    /// `HOST:PORT`, an IPv6 host in brackets, as a URL has it.
    static func address(_ host: String, _ port: Int) -> String {
        "\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// Loopback, where no token is needed: `localhost`, `::1` and `127.0.0.0/8` written as an
    /// address (not a name that merely starts with `127.`, which DNS may send anywhere).
    static func isLoopback(_ host: String) -> Bool {
        ServiceServer.isLoopback(host)
    }

    static var defaultTokenFile: String {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"] ?? "\(environment["HOME"] ?? ".")/.config"
        return "\(config)/fieldcap/token"
    }

    func validate() throws {
        guard idleTimeout.seconds >= 0.1 else {
            throw ValidationError("--idle-timeout must be at least 100ms: give e.g. 15s")
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections \(maxConnections) must be at least 1")
        }
        guard fleetHorizon.seconds > 0 else {
            throw ValidationError("--fleet-horizon must be more than 0: give e.g. 10m or 1h")
        }
        guard Self.parseListen(listen) != nil else {
            throw ValidationError(
                "--listen '\(listen)' is not ADDR:PORT: give 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080")
        }
        if scmf != "off" && Self.parseListen(scmf) == nil {
            throw ValidationError("--scmf '\(scmf)' is not ADDR:PORT: give 127.0.0.1:9876, 0.0.0.0:9876 or off")
        }
        if let foxgloveMaxRate, !(foxgloveMaxRate >= 0.1 && foxgloveMaxRate <= 100_000) {
            throw ValidationError(
                "--foxglove-max-rate \(foxgloveMaxRate) is out of range: give 0.1 to 100000 messages a second")
        }
        if foxgloveMaxRate != nil && foxglove == nil {
            throw ValidationError("--foxglove-max-rate is for the Foxglove server: give --foxglove ADDR:PORT too")
        }
        if let foxglove, Self.parseListen(foxglove) == nil {
            throw ValidationError(
                "--foxglove '\(foxglove)' is not ADDR:PORT: give 127.0.0.1:8765, or 0.0.0.0:8765 with the token")
        }
        guard previewRate > 0 && previewRate <= 120 else {
            throw ValidationError("--preview-rate \(previewRate) is out of range: give 0.1 to 120 frames a second")
        }
        guard (1...100).contains(previewQuality) else {
            throw ValidationError("--preview-quality \(previewQuality) is out of range: give 1 to 100")
        }
        if let server, let problem = CaptureServerClient.problem(with: server, insecure: insecure) {
            throw ValidationError("--server '\(server)': \(problem)")
        }
        if server == nil && (insecure || name != nil || serverMaxMessage != nil || blurFaces == true) {
            throw ValidationError(
                "--insecure, --name, --server-max-message and --blur-faces are for a capture server: "
                    + "give --server ws://HOST:PORT too"
            )
        }
        if let serverMaxMessage, serverMaxMessage.bytes < 1024 {
            throw ValidationError(
                "--server-max-message \(serverMaxMessage) is too small: give 1K or more (AllSpark's is 300M)")
        }
        if config != nil && !devices.isEmpty {
            throw ValidationError(
                "--config \(config!) describes the devices; give either --config or --cam/--imu, not both")
        }
    }

    func run() throws {
        try waitForAsync { try await serve() }
    }

    func serve() async throws {
        let logger = Logger(label: "fieldcap.serve")
        let (host, port) = Self.parseListen(listen)!
        let rigConfig = try config.map { try RigConfig.loadForCommand(path: $0) }
        var overrides = RecordingSettings.Overrides(
            hostId: hostId, root: root, minFree: minFree, segment: segment, maxStorage: maxStorage, keep: keep)
        overrides.wallClock = wallClock
        overrides.markGPIO = markGPIO.lines
        let coverPreviews = previewBlurFaces ?? rigConfig?.previewBlurFaces ?? false
        let coverUploads = server != nil && (blurFaces ?? rigConfig?.uploadBlurFaces ?? false)
        // Checked now: a rig that should cover faces and cannot says so at its start, not at its
        // first preview or upload.
        let asked = [
            (coverPreviews, previewBlurFaces != nil ? "--preview-blur-faces" : "preview_blur_faces in \(config ?? "")"),
            (coverUploads, blurFaces != nil ? "--blur-faces" : "upload_blur_faces in \(config ?? "")"),
        ]
        for (wanted, option) in asked where wanted {
            do throws(FaceCoverError) { _ = try MTCNNFaceDetector() } catch {
                say("Error: \(option): \(error)")
                throw ExitCode(64)
            }
        }
        let base = RigService.Base(
            config: rigConfig, devices: rigConfig == nil ? try devices.specs : [],
            overrides: overrides,
            directIO: !noDirectIO, previewRate: previewRate, previewQuality: previewQuality,
            previewFaces: coverPreviews ? FaceCover.Settings() : nil,
            syncChecker: SessionSyncChecker(), checkSyncByDefault: checkSync)
        let rig: RigService
        do {
            rig = try RigService(base: base, logger: .lines(label: "fieldcap.recording") { say($0) })
        } catch let error as PlanError {
            throw error.exitForCommand()
        } catch let error as DeviceSetupError {
            say("Error: \(error.message)")
            throw ExitCode(64)
        }
        try FileManager.default.createDirectory(atPath: rig.settings.root, withIntermediateDirectories: true)

        var token: BearerToken?
        let foxgloveAddress = foxglove.flatMap(Self.parseListen)
        if tokenFile != nil || !Self.isLoopback(host) || foxgloveAddress.map({ !Self.isLoopback($0.host) }) == true {
            let path = tokenFile ?? Self.defaultTokenFile
            do {
                let loaded = try BearerToken.load(path: path)
                token = loaded.token
                if loaded.created { say("made a new API token in \(path) (mode 0600)") }
            } catch let error as TokenFileError {
                say("Error: \(error)")
                throw ExitCode(64)
            }
        }
        let needsToken = token != nil
        for device in rig.devices { say("  \(device.id)  \(device.device)  \(device.summary)") }
        for (id, why) in rig.previews.unavailable.sorted(by: { $0.key < $1.key }) {
            say("  \(id) has no preview: \(why)")
        }
        let scmfServer = try await bindSCMF(rig.previews)
        let captureServer = server.map { url in
            CaptureServerClient(
                rig: rig,
                options: CaptureServerClient.Options(
                    url: url, name: name ?? rig.settings.hostId, insecure: insecure,
                    maxMessageBytes: serverMaxMessage?.bytes ?? 314_572_800,
                    faces: coverUploads ? FaceCover.Settings() : nil),
                logger: logger, notices: .lines(label: "fieldcap.capture-server") { say($0) })
        }
        let foxgloveServer = try await foxgloveService(rig: rig, token: token, at: foxgloveAddress, logger: logger)
        let member = try fleetMember(rig: rig)
        do {
            try member?.start()
        } catch {
            say("Error: --mqtt \(fleet.mqtt ?? ""): \(error)")
            throw ExitCode(64)
        }
        defer { member?.stop() }
        do {
            try await ServiceServer.run(
                rig: rig, host: host, port: port, token: token, scmf: scmfServer,
                services: captureServer.map { [$0] } ?? [], foxglove: foxgloveServer,
                announce: !noAnnounce && !Self.isLoopback(host),
                limits: ServiceServer.Limits(
                    idleTimeout: .nanoseconds(Int64(idleTimeout.nanoseconds)),
                    maxConnections: maxConnections ?? ServiceServer.Limits.defaultMaxConnections()),
                logger: logger, notices: .lines(label: "fieldcap.service") { say($0) },
                recordingFinished: { stopped in
                    // A stop the disk held was given up: the session needs recover, and the
                    // process says so in its status, as `fieldcap record` does.
                    if let stopped, stopped.reason == StoppedEvent.diskNotAnswering {
                        exitGivingUp(
                            saying:
                                "Error: \(stopped.error ?? "the recording's stop was given up"): \(stopped.directory)")
                    }
                    Self.exitIfStuck(afterSeconds: 5)
                }
            ) {
                host, port in
                say(
                    "serving \(rig.devices.count) device\(rig.devices.count == 1 ? "" : "s") "
                        + "on http://\(Self.address(host, port)) (sessions in "
                        + "\(rig.settings.root)\(needsToken ? ", token required" : ""))"
                )
            }
        } catch {
            say("Error: --listen \(listen): \(error)")
            throw ExitCode(1)
        }
        say("stopped")
    }

    /// The recording is finished; the rest (clients, listeners) gets `seconds` to stop, and the
    /// service group cancels what is left after 3 s. A peer's connection that ignores even
    /// cancellation (a library call that cannot be interrupted) must not keep the process
    /// alive: its files are closed, so the process ends here with what it has.
    static func exitIfStuck(afterSeconds seconds: UInt32) {
        detachThread(named: "fc-stop-watch") {
            sleep(seconds)
            say("stopped: the recording is finished; a connection did not close within \(seconds) s, so fieldcap exits")
            fflush(nil)
            _exit(0)
        }
    }

    /// The Foxglove server, or nil when it is off. Its address is tried first (then let go for
    /// the server to take), so an address in use is its own error, not the API's.
    func foxgloveService(
        rig: RigService, token: BearerToken?, at address: (host: String, port: Int)?, logger: Logger
    )
        async throws -> FoxgloveService?
    {
        guard let (host, port) = address else { return nil }
        if port != 0 {
            do { try await FoxgloveServer.probe(host: host, port: port) } catch {
                say("Error: --foxglove \(foxglove ?? ""): \(error); give another ADDR:PORT")
                throw ExitCode(1)
            }
        }
        let server = FoxgloveServer(rig: rig, token: token, maxSensorRate: foxgloveMaxRate)
        return server.service(host: host, port: port, logger: logger) { host, port in
            say(
                "Foxglove WebSocket on ws://\(Self.address(host, port))/ (\(server.channelCount) channels"
                    + "\(token != nil ? "; add ?token=TOKEN" : ""))")
        }
    }

    /// The SCMF listener, or nil when it is off or there is no camera to send.
    func bindSCMF(_ previews: Previews) async throws -> SCMFServer? {
        guard scmf != "off", let (host, port) = Self.parseListen(scmf) else { return nil }
        let stream: PreviewStream
        if let id = scmfStream {
            guard let chosen = previews.streams[id] else {
                let why = previews.unavailable[id].map { "it has no preview: \($0)" } ?? "there is no such camera"
                say("Error: --scmf-stream \(id): \(why); the previews are \(previews.streams.keys.sorted())")
                throw ExitCode(64)
            }
            stream = chosen
        } else {
            guard let first = previews.cameraIds.compactMap({ previews.streams[$0] }).first else {
                say("SCMF off: no camera with a preview")
                return nil
            }
            stream = first
        }
        do {
            let server = try await SCMFServer.bind(host: host, port: port, stream: stream)
            say("SCMF v1 preview of \(stream.id) on tcp://\(Self.address(host, server.port))")
            return server
        } catch {
            say("Error: --scmf \(scmf): \(error); give another ADDR:PORT, or --scmf off")
            throw ExitCode(1)
        }
    }
}

/// The rig's camera–IMU offset check (`serve --check-sync`): `FieldcapSyncCheck`, handed to the
/// rig layer, which runs it after each recording that asks. Says what it found on the terminal.
struct SessionSyncChecker: SyncChecker {
    func checkAndSave(directory: String) throws -> (session: String, entry: SyncCheckEntry) {
        do {
            let checked = try SessionSyncCheck.checkAndSave(directory: directory)
            let pairs = checked.entry.pairs.map { pair in
                guard let estimate = pair.imageAlignment.estimate else {
                    if case .refused(_, let message) = pair.imageAlignment {
                        return "\(pair.camera)–\(pair.imu) refused: \(message)"
                    }
                    return "\(pair.camera)–\(pair.imu) refused"
                }
                return "\(pair.camera)–\(pair.imu) " + cFormat("%+.2f ms", Double(estimate.offsetNs) / 1e6)
                    + cFormat(" (confidence %.2f)", estimate.confidence)
            }
            say("sync check of \(PathName.base(of: checked.session)): \(pairs.joined(separator: "; "))")
            return checked
        } catch {
            say("sync check of \(PathName.base(of: directory)) not done: \(error)")
            throw error
        }
    }
}

extension Serve {
    /// The rig's side of a fleet (`--mqtt`): starts and stops go to the rig's recording service.
    func fleetMember(rig: RigService) throws -> FleetMember? {
        let host = rig.settings.hostId
        guard let options = try fleet.options(clientId: host) else { return nil }
        return try FleetMember(
            options: options, fleet: fleet.fleet, host: host, version: Sidecar.fieldcapVersion,
            rig: FleetMember.Rig(service: rig), horizonNs: UInt64(fleetHorizon.seconds * 1e9),
            logger: .lines(label: "fieldcap.fleet") { say($0) })
    }
}
