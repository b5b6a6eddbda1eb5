import FieldcapService
import FieldcapSession
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// What the rig does with each message of the capture server, and the answer it sends.
final class CommandHandler: Sendable {
    let rig: RigService
    let link: ServerLink
    let logger: Logger
    /// The last `clientConfig`: the segment length and budget of the recordings the server starts.
    let config = Mutex(ServerMessage.ClientConfig())

    /// What fieldcap writes, by the names a capture server may give it.
    static let writableFormats: Set<String> = ["mkv", "matroska", "video/x-matroska"]
    /// The AllSpark app's own default chunk: used until a clientConfig says otherwise.
    static let defaultChunk = TimeSpan(seconds: 30)

    init(rig: RigService, link: ServerLink, logger: Logger) {
        self.rig = rig
        self.link = link
        self.logger = logger
    }

    /// Ranges asked for whose upload has not gone through: sent again, whole, on the next
    /// connection (unless an attempt is under way).
    struct PendingUpload {
        var upload: RangeUpload
        var inFlight: Bool
    }
    let pendingUploads = Mutex<[UUID: PendingUpload]>([:])
    /// The server's answers to the uploads sent.
    let answers = AnswerQueue()
    /// How long an upload waits for the server to say it stored the file.
    static let answerTimeout = Duration.seconds(120)

    func handle(_ message: ServerMessage, outbox: Outbox) async {
        if case .status(let status, let text) = message {
            // The server's answer to an upload: noted, not answered (answers get no answer).
            logger.info("capture server says \(status): \(text ?? "")")
            if !answers.deliver(AnswerQueue.Answer(success: status == "success", message: text)) {
                logger.notice("capture server sent a status no upload waits for: \(status) \(text ?? "")")
            }
            return
        }
        if case .uploadTimeRange(let fromNs, let toNs) = message {
            link.update { $0.commands += 1 }
            let id = UUID()
            pendingUploads.withLock {
                $0[id] = PendingUpload(upload: RangeUpload(fromNs: fromNs, toNs: toNs), inFlight: true)
            }
            // Off the reading loop: the server's answers and other commands go on meanwhile.
            Task { await send(id, outbox: outbox) }
            return
        }
        link.update { $0.commands += 1 }
        let (success, text, answering) = await answer(message)
        if !success { logger.warning("capture server: \(answering): \(text)") }
        do {
            try await outbox.text(ClientMessage.status(success: success, message: text, answering: answering))
        } catch {
            logger.info("capture server: could not answer \(answering): \(error)")
        }
    }

    private func answer(_ message: ServerMessage) async -> (Bool, String, String) {
        switch message {
        case .clientConfig(let new):
            let applied = config.withLock { current in
                if let chunk = new.chunkDuration { current.chunkDuration = chunk }
                if let budget = new.bufferMax { current.bufferMax = budget }
                if let format = new.videoFormat { current.videoFormat = format }
                return current
            }
            var text =
                "segments of \(applied.chunkDuration ?? Self.defaultChunk), budget \(applied.bufferMax.map { "\($0)" } ?? "none")"
            if rig.recordingDirectory != nil { text += " from the next recording (one is running)" }
            if let format = new.videoFormat, !Self.writableFormats.contains(format.lowercased()) {
                return (
                    false,
                    "videoFormat \(format): fieldcap writes Matroska video (mkv) and cannot write \(format); the rest applies: \(text)",
                    "clientConfig"
                )
            }
            return (true, "clientConfig applied: \(text)", "clientConfig")
        case .record(let duration):
            let settings = config.withLock { $0 }
            do {
                let directory = try await rig.start(
                    RigService.StartRequest(
                        duration: duration, segment: settings.chunkDuration ?? Self.defaultChunk,
                        maxStorage: settings.bufferMax))
                let name = URL(fileURLWithPath: directory).lastPathComponent
                return (true, "recording \(name)\(duration.map { " for \($0)" } ?? " until told to stop")", "record")
            } catch {
                return (false, "cannot record: \(error)", "record")
            }
        case .uploadTimeRange, .status:
            return (true, "", "")  // handled above
        case .unknownCommand(let name):
            logger.notice("capture server sent an unknown command \(name)")
            return (false, "unknown command \(name): fieldcap knows record and uploadTimeRange", name)
        case .unusable(let why):
            return (false, "cannot use this message: \(why)", "message")
        }
    }

    func resumeUploads(outbox: Outbox) {
        let ids = pendingUploads.withLock { pending in
            let idle = pending.filter { !$0.value.inFlight }.map(\.key)
            for id in idle { pending[id]?.inFlight = true }
            return idle
        }
        for id in ids { Task { await send(id, outbox: outbox) } }
    }

    /// Stages the range, sends it, reports what went; a connection lost part-way leaves it
    /// pending for the next one. The staged files are removed whatever happens.
    private func send(_ id: UUID, outbox: Outbox) async {
        guard let upload = pendingUploads.withLock({ $0[id]?.upload }) else { return }
        let root = rig.settings.root, hostId = rig.settings.hostId
        let staged: RangeUpload.Staged
        do {
            staged = try await NIOThreadPool.singleton.runIfActive { try upload.stage(root: root, hostId: hostId) }
        } catch {
            _ = pendingUploads.withLock { $0.removeValue(forKey: id) }
            try? await outbox.text(
                ClientMessage.status(
                    success: false, message: "cannot upload \(upload.rangeText): \(error)", answering: "uploadTimeRange"
                ))
            return
        }
        defer { RangeUpload.remove(scratch: staged.scratch, tar: staged.tar) }
        let place = answers.register()
        do {
            try await outbox.upload(
                metadata: ClientMessage.uploadMetadata(
                    filename: staged.filename, filesize: Int64(staged.size), mimetype: "application/x-tar"),
                file: staged.tar, size: staged.size)
        } catch {
            answers.failAll()
            pendingUploads.withLock { $0[id]?.inFlight = false }
            logger.warning(
                "capture server: the upload of \(upload.rangeText) failed (\(error)); it goes again, whole, on the next connection"
            )
            return
        }
        // Sent is not stored: the server says so (the protocol's status), or it goes again.
        guard let answer = await answers.answer(place, timeout: Self.answerTimeout) else {
            pendingUploads.withLock { $0[id]?.inFlight = false }
            logger.warning(
                "capture server: no answer to the upload of \(upload.rangeText); it goes again, whole, on the next connection"
            )
            return
        }
        _ = pendingUploads.withLock { $0.removeValue(forKey: id) }
        if answer.success { link.update { $0.uploads += 1 } }
        try? await outbox.text(
            ClientMessage.status(
                success: answer.success,
                message: answer.success
                    ? "sent \(staged.filename), \(staged.size) bytes: \(upload.rangeText), \(staged.summary)"
                    : "the server refused \(staged.filename): \(answer.message ?? "no reason given")",
                answering: "uploadTimeRange"))
    }
}
