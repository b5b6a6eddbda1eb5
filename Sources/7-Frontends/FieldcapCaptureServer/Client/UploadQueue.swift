import FieldcapArchive
import FieldcapCore
import FieldcapFaces
import FieldcapRig
import FieldcapSegments
import FieldcapSession
import FoundationEssentials
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// The uploads the server asked for, sent one at a time (so each reply is attributable, see
/// `ReplyRouter`), each under the server's message limit, retried with back-off after a lost
/// connection and given up after `Policy.maxAttempts`; a refusal or a 1009 close is final.
final class UploadQueue: Sendable {
    struct Policy: Sendable {
        /// AllSpark's server reads one WebSocket message of at most this many bytes (aiohttp's
        /// `max_msg_size=314572800`, 300 MiB) and closes with 1009 on a larger one.
        var maxMessageBytes: UInt64 = 314_572_800
        /// Cover the faces of the uploaded videos (`RangeUpload.stage`).
        var faces: FaceCover.Settings?
        var maxAttempts = 5
        var firstRetry: Duration = .seconds(2)
        var longestRetry: Duration = .seconds(60)
        /// How long the server may take to say it stored a file.
        var answerTimeout: Duration = .seconds(120)

        /// 2 s, 4 s, 8 s, ... up to `longestRetry`.
        func retryDelay(after attempt: Int) -> Duration {
            min(firstRetry * (1 << min(max(attempt, 1) - 1, 20)), longestRetry)
        }
    }

    struct Item: Sendable {
        var id = UUID()
        var range: RangeUpload
        /// Attempts so far that got no answer.
        var attempts = 0
        /// The range's files the server said it stored (by name), not sent again on a retry.
        var stored: Set<String> = []
        var notBefore = ContinuousClock.now
    }

    private struct State {
        var items: [Item] = []
        /// Wall-clock ranges the server said it stored.
        var delivered: [ClosedRange<UInt64>] = []
    }

    let rig: RigService
    let link: ServerLink
    let logger: Logger
    let policy: Policy
    let replies = ReplyRouter()
    private let state = Mutex(State())

    init(rig: RigService, link: ServerLink, logger: Logger, policy: Policy) {
        self.rig = rig
        self.link = link
        self.logger = logger
        self.policy = policy
    }

    /// Queues the ranges not already waiting; says what it did.
    func enqueue(_ ranges: [RangeUpload]) -> String {
        let added = state.withLock { state in
            var added = 0
            for range in ranges where !state.items.contains(where: { $0.range.isSame(as: range) }) {
                state.items.append(Item(range: range))
                added += 1
            }
            return added
        }
        updatePending()
        return added == ranges.count ? "queued" : added == 0 ? "already queued" : "\(added) queued, the rest already"
    }

    /// The finished chunks of the current (else the newest) recording the server has not said
    /// it stored, each as its own range.
    func notYetReceived() -> [RangeUpload] {
        guard let directory = rig.recordingDirectory ?? newestRecording() else { return [] }
        let delivered = state.withLock { $0.delivered }
        return Self.finishedChunks(of: directory).filter { range in
            !delivered.contains { range.isCovered(by: $0) }
        }
    }

    /// The newest recording or session in the root (names sort by their start).
    private func newestRecording() -> String? {
        let root = rig.settings.root
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { !$0.hasPrefix(".") }
        return names.sorted().reversed().map { "\(root)/\($0)" }.first {
            RecordingIndex.read(directory: $0) != nil || Self.finishedSession($0) != nil
        }
    }

    /// What the server knows as chunks: a segmented recording's finished segments, or the
    /// whole of a finished recording without segments.
    static func finishedChunks(of directory: String) -> [RangeUpload] {
        if RecordingIndex.read(directory: directory) != nil { return finishedSegments(of: directory) }
        return finishedSession(directory).map { [$0] } ?? []
    }

    /// A session without segments, once finished, as the wall-clock range it was recorded in.
    static func finishedSession(_ directory: String) -> RangeUpload? {
        guard let contents = Sidecar.Contents(layout: SessionLayout(directory: directory)),
            contents.state == "complete" || contents.state == "recovered",
            let from = contents.startedUtc.flatMap(UTCTime.parse), let to = contents.stoppedUtc.flatMap(UTCTime.parse),
            to > from
        else { return nil }
        return RangeUpload(fromNs: from, toNs: to)
    }

    /// A segmented recording's finished segments, as wall-clock ranges.
    static func finishedSegments(of directory: String) -> [RangeUpload] {
        guard let index = RecordingIndex.read(directory: directory) else { return [] }
        return index.segments.compactMap { segment in
            guard segment.state == .complete, let from = UTCTime.parse(segment.startUtc),
                let to = UTCTime.parse(segment.endUtc), to > from
            else { return nil }
            return RangeUpload(fromNs: from, toNs: to)
        }
    }

    private func updatePending() {
        let count = state.withLock { $0.items.count }
        link.update { $0.uploadsPending = count }
    }

    private func nextReady() -> Item? {
        let now = ContinuousClock.now
        return state.withLock { $0.items.first { $0.notBefore <= now } }
    }

    private func remove(_ id: UUID) {
        state.withLock { $0.items.removeAll { $0.id == id } }
        updatePending()
    }

    private func giveUp(_ item: Item, _ why: String) {
        remove(item.id)
        link.update {
            $0.uploadFailures += 1
            $0.lastUploadFailure = why
        }
        logger.warning("capture server: \(why)")
    }

    struct NoAnswer: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends what is queued, one at a time, until cancelled. Throws when the connection can no
    /// longer be trusted to pair replies with uploads (an answer that never came).
    func run(outbox: Outbox) async throws {
        while !Task.isCancelled {
            guard let item = nextReady() else {
                try await Task.sleep(for: .milliseconds(200))
                continue
            }
            try await send(item, outbox: outbox)
        }
    }

    private func send(_ item: Item, outbox: Outbox) async throws {
        let range = item.range
        let attempt = item.attempts + 1
        let root = rig.settings.root, hostId = rig.settings.hostId
        let staged: RangeUpload.Staged
        do {
            let faces = policy.faces
            staged = try await NIOThreadPool.singleton.runIfActive {
                try range.stage(root: root, hostId: hostId, faces: faces)
            }
        } catch {
            giveUp(item, "cannot upload \(range.rangeText): \(error)")
            return
        }
        defer { RangeUpload.remove(scratch: staged.scratch) }
        if let problem = staged.videoProblem, attempt == 1 {
            logger.warning(
                policy.faces == nil
                    ? """
                    capture server: \(range.rangeText) goes without MP4s, \
                    its videos inside the tar as recorded: \(problem)
                    """
                    : """
                    capture server: \(range.rangeText) goes without its videos \
                    (their faces could not be covered, and are never sent as recorded): \(problem)
                    """
            )
        }
        if let large = staged.files.first(where: { $0.size > policy.maxMessageBytes }) {
            let parts = range.split(byRecordingIndexOf: staged.source)
            if parts.count > 1 {
                state.withLock { state in
                    guard let at = state.items.firstIndex(where: { $0.id == item.id }) else { return }
                    state.items.replaceSubrange(at...at, with: parts.map { Item(range: $0) })
                }
                updatePending()
                logger.warning(
                    """
                    capture server: \(large.filename) of \(range.rangeText) is \(large.size) bytes, over the server's \
                    \(policy.maxMessageBytes)-byte message limit: sent as \(parts.count) uploads, one a segment
                    """
                )
            } else {
                giveUp(
                    item,
                    "not sent: \(large.filename) (\(range.rangeText), one segment) is \(large.size) bytes, "
                        + "over the server's \(policy.maxMessageBytes)-byte message limit (aiohttp "
                        + "max_msg_size); shorter segments (the server's videoChunkDurationMs) keep each under it"
                )
            }
            return
        }
        var stored = item.stored
        for file in staged.files where !stored.contains(file.filename) {
            let place = replies.expect()
            do {
                try await outbox.upload(
                    metadata: ClientMessage.uploadMetadata(
                        filename: file.filename, filesize: Int64(file.size), mimetype: file.mimetype),
                    file: file.path, size: file.size)
            } catch {
                // The connection's end (and its close code) says what became of it.
                logger.debug("capture server: sending \(file.filename) failed: \(error)")
            }
            switch await replies.outcome(place, timeout: policy.answerTimeout) {
            case .stored:
                stored.insert(file.filename)
                state.withLock { state in
                    guard let at = state.items.firstIndex(where: { $0.id == item.id }) else { return }
                    state.items[at].stored = stored
                }
                link.update { $0.uploads += 1 }
                logger.info(
                    "capture server stored \(file.filename), \(file.size) bytes (\(range.rangeText))")
            case .refused(let why):
                giveUp(item, "the server refused \(file.filename) (\(range.rangeText)): \(why); not sent again")
                return
            case .tooLarge:
                giveUp(
                    item,
                    "the server closed the connection on \(file.filename) "
                        + "(\(file.size) bytes) with 1009, message too large; not sent again"
                )
                return
            case .lost(let why):
                // Stopping (the service, or this connection's worker): it stays queued as it was.
                if Task.isCancelled { return }
                if attempt >= policy.maxAttempts {
                    giveUp(item, "gave up \(file.filename) (\(range.rangeText)) after \(attempt) attempts: \(why)")
                    return
                }
                let wait = policy.retryDelay(after: attempt)
                state.withLock { state in
                    guard let at = state.items.firstIndex(where: { $0.id == item.id }) else { return }
                    state.items[at].attempts = attempt
                    state.items[at].notBefore = .now + wait
                }
                logger.warning(
                    """
                    capture server: attempt \(attempt) of \(policy.maxAttempts) to upload \(file.filename) \
                    (\(range.rangeText)) failed: \(why); again in \(wait), with the files not yet stored
                    """
                )
                // No answer on a connection still open: a late one could be taken for the next
                // upload's, so this connection ends and the next starts clean.
                throw NoAnswer(description: why)
            }
        }
        remove(item.id)
        state.withLock { $0.delivered.append(range.fromNs...max(range.fromNs, range.toNs - 1)) }
        logger.info(
            """
            capture server has all of \(range.rangeText): \(staged.files.count) \
            files, \(staged.size) bytes, \(staged.summary)
            """
        )
    }
}
