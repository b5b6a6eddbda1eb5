import FieldcapArchive
import FieldcapRig
import FieldcapSession
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// What the rig does with each message of the capture server. Nothing is answered on the
/// socket: AllSpark's server takes every message without a known `type` for an error, and its
/// app answers no command either. What happened is logged and shown in the status
/// (`server.last_command`).
final class CommandHandler: Sendable {
    let rig: RigService
    let link: ServerLink
    let logger: Logger
    /// The last `clientConfig`: the segment length and budget of the recordings the server starts.
    let config = Mutex(ServerMessage.ClientConfig())
    let uploads: UploadQueue

    /// What fieldcap uploads (each camera an H.264 MP4, `RangeUpload`), by the names a capture
    /// server may give it.
    static let uploadedFormats: Set<String> = ["mp4", "video/mp4", "h264", "h.264"]
    /// The AllSpark app's own default chunk: used until a clientConfig says otherwise.
    static let defaultChunk = TimeSpan(seconds: 30)

    init(rig: RigService, link: ServerLink, logger: Logger, policy: UploadQueue.Policy = .init()) {
        self.rig = rig
        self.link = link
        self.logger = logger
        uploads = UploadQueue(rig: rig, link: link, logger: logger, policy: policy)
    }

    /// Notes what the server asked and what came of it.
    private func note(_ text: String, warning: Bool = false) {
        link.update {
            $0.commands += 1
            $0.lastCommand = text
        }
        if warning { logger.warning("capture server: \(text)") } else { logger.info("capture server: \(text)") }
    }

    func handle(_ message: ServerMessage) async {
        switch message {
        case .status(let status, let text):
            let kind = uploads.replies.deliver(success: status == "success", message: text)
            switch kind {
            case .answer, .chunkAcknowledged, .metadataRefused:
                logger.debug("capture server says \(status): \(text ?? "")")
            case .complaint:
                logger.warning("capture server did not understand a message of the rig: \(text ?? "")")
            case .stray:
                logger.notice("capture server sent a status no upload waits for: \(status) \(text ?? "")")
            }
        case .uploadTimeRange(let fromNs, let toNs):
            let range = RangeUpload(fromNs: fromNs, toNs: toNs)
            note("uploadTimeRange \(range.rangeText): \(uploads.enqueue([range]))")
        case .upload:
            let ranges = uploads.notYetReceived()
            note(
                ranges.isEmpty
                    ? "upload: the server has every finished segment already"
                    : "upload: \(uploads.enqueue(ranges)) (\(ranges.count) "
                        + "segment\(ranges.count == 1 ? "" : "s") not received yet)"
            )
        case .clientConfig(let new):
            let applied = config.withLock { current in
                if let chunk = new.chunkDuration { current.chunkDuration = chunk }
                if let budget = new.bufferMax { current.bufferMax = budget }
                if let format = new.videoFormat { current.videoFormat = format }
                return current
            }
            var text =
                "segments of \(applied.chunkDuration ?? Self.defaultChunk), "
                + "budget \(applied.bufferMax.map { "\($0)" } ?? "none")"
            if rig.recordingDirectory != nil { text += " from the next recording (one is running)" }
            if let format = new.videoFormat, !Self.uploadedFormats.contains(format.lowercased()) {
                text += "; videoFormat \(format): fieldcap uploads each camera as H.264 MP4"
            }
            note("clientConfig applied: \(text)")
        case .record(let duration):
            let settings = config.withLock { $0 }
            do {
                let directory = try await rig.start(
                    RigService.StartRequest(
                        duration: duration, segment: settings.chunkDuration ?? Self.defaultChunk,
                        maxStorage: settings.bufferMax))
                let name = URL(fileURLWithPath: directory).lastPathComponent
                note("record: recording \(name)\(duration.map { " for \($0)" } ?? " until stopped")")
            } catch {
                note("record: cannot record: \(error)", warning: true)
            }
        case .unknownCommand(let name):
            note("unknown command \(name): ignored (fieldcap knows record, uploadTimeRange and upload)", warning: true)
        case .unusable(let why):
            note("an unusable message: \(why)", warning: true)
        }
    }
}
