import FieldcapService
import FieldcapSession
import Foundation
import Logging
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

    func handle(_ message: ServerMessage, outbox: Outbox) async {
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
        case .uploadTimeRange:
            return (false, "uploadTimeRange is not supported by this fieldcap yet", "uploadTimeRange")
        case .status(let status, let message):
            logger.info("capture server says \(status): \(message ?? "")")
            return (true, "noted", "status")
        case .unknownCommand(let name):
            logger.notice("capture server sent an unknown command \(name)")
            return (false, "unknown command \(name): fieldcap knows record and uploadTimeRange", name)
        case .unusable(let why):
            return (false, "cannot use this message: \(why)", "message")
        }
    }
}
