import FieldcapArchive
import FieldcapCore
import FieldcapRig
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import Logging
import Synchronization

/// `chunkSaved` for each segment of a recording as it closes, as the AllSpark app announces
/// each chunk: the server relays it to its agents and, with `autoUpload`, asks for that range
/// at once. One message a segment (the first camera's, with every camera's frames in the
/// upload it leads to): one a camera would have the server ask for the same range once per
/// camera. Segments that closed while the connection was down go on the next one.
/// A recording without segments is one chunk, announced when it stops.
final class ChunkAnnouncer: Sendable {
    let rig: RigService
    let logger: Logger
    /// `recording/segment` of every segment announced.
    private let announced = Mutex<Set<String>>([])

    init(rig: RigService, logger: Logger) {
        self.rig = rig
        self.logger = logger
    }

    /// Until cancelled, or until the connection fails a send.
    func run(outbox: Outbox) async {
        let events = rig.events.watch()
        if let directory = rig.recordingDirectory, !(await announce(directory, outbox: outbox)) { return }
        for await event in events {
            let directory: String?
            switch event {
            case .segmentRotated: directory = rig.recordingDirectory
            case .stopped(let stopped): directory = stopped.directory
            default: directory = nil
            }
            if let directory, !(await announce(directory, outbox: outbox)) { return }
        }
    }

    /// False when the connection failed a send.
    private func announce(_ directory: String, outbox: Outbox) async -> Bool {
        guard let index = RecordingIndex.read(directory: directory) else {
            return await announceSession(directory, outbox: outbox)
        }
        let camera = index.streams.first { $0.kind == "video" }
        for segment in index.segments where segment.state == .complete {
            let key = "\(directory)/\(segment.directory)"
            guard let from = UTCTime.parse(segment.startUtc), let to = UTCTime.parse(segment.endUtc), to > from,
                announced.withLock({ $0.insert(key).inserted })
            else { continue }
            let message = ClientMessage.chunkSaved(
                startTime: Double(from) / 1e9, endTime: Double(to) / 1e9, camera: camera?.id ?? "none",
                // The format the chunk is uploaded in when the server asks for it (RangeUpload).
                size: Int64(clamping: segment.bytes ?? 0), format: "mp4", fps: camera?.nominalRate ?? 0, width: nil,
                height: nil)
            do {
                try await outbox.text(message)
                logger.info("capture server: chunkSaved \(segment.directory) of \(index.hostId)")
            } catch {
                _ = announced.withLock { $0.remove(key) }
                return false
            }
        }
        return true
    }

    /// A finished recording without segments, as one chunk.
    private func announceSession(_ directory: String, outbox: Outbox) async -> Bool {
        guard let range = UploadQueue.finishedSession(directory),
            let contents = Sidecar.Contents(layout: SessionLayout(directory: directory)),
            announced.withLock({ $0.insert(directory).inserted })
        else { return true }
        let camera = contents.streams.first { $0.format != nil }
        let message = ClientMessage.chunkSaved(
            startTime: Double(range.fromNs) / 1e9, endTime: Double(range.toNs) / 1e9, camera: camera?.id ?? "none",
            size: Int64(clamping: SessionFiles.bytesOnDisk(directory)), format: "mp4", fps: camera?.nominalRate ?? 0,
            width: camera?.format?.width, height: camera?.format?.height)
        do {
            try await outbox.text(message)
            logger.info("capture server: chunkSaved \(URL(fileURLWithPath: directory).lastPathComponent)")
            return true
        } catch {
            _ = announced.withLock { $0.remove(directory) }
            return false
        }
    }
}
