import FoundationEssentials
import Synchronization

/// Tells the server's `{"status","message"}` replies apart and hands an upload its own.
///
/// The protocol's replies name nothing they answer. What makes them attributable: the server
/// reads one connection's messages in order and replies in that order; it replies to every
/// upload's binary message exactly once (stored, or why not), to its metadata only when it
/// refuses it (and then the binary draws "Metadata not received yet" too), to `chunkSaved`
/// with an acknowledgement, and to a message it does not know with "Unknown message type".
/// So one upload is in flight at a time, its answer is the first reply that is none of the
/// others, and a metadata refusal before it is kept as the reason.
final class ReplyRouter: Sendable {
    enum Outcome: Sendable, Equatable {
        case stored(String)
        /// The server said no: final for that file.
        case refused(String)
        /// Closed with 1009: the message is over the server's limit; final for that file.
        case tooLarge
        /// The connection ended before a reply: the upload may go again.
        case lost(String)
    }

    /// What a reply was, for the log.
    enum Kind: Equatable {
        case answer
        case chunkAcknowledged
        /// "Unknown message type", "Invalid JSON": the server did not understand something sent.
        case complaint
        /// A refused metadata message: kept as the reason of the answer to come.
        case metadataRefused
        /// A reply no upload waits for.
        case stray
    }

    /// The AllSpark server's own words, as its replies spell them.
    static let chunkAcknowledgement = "Chunk saved info received"
    static let complaints: Set<String> = ["Unknown message type", "Invalid JSON", "Test message received"]
    static let metadataRefusals: Set<String> = ["Invalid upload metadata", "Failed to write file"]

    private struct State {
        var waiting: (id: UUID, continuation: CheckedContinuation<Outcome, Never>?)?
        var early: Outcome?
        var metadataRefusal: String?
    }

    private let state = Mutex(State())

    /// Takes the one place before the upload is sent, so a reply that comes quickly is kept.
    func expect() -> UUID {
        let id = UUID()
        state.withLock { $0 = State(waiting: (id, nil)) }
        return id
    }

    /// The upload's outcome; `timeout` passed first gives `.lost`.
    func outcome(_ id: UUID, timeout: Duration) async -> Outcome {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { resolve(.lost("no answer within \(timeout)"), only: id) }
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready: Outcome? = state.withLock { state in
                guard state.waiting?.id == id else { return .lost("superseded") }
                if let early = state.early {
                    state = State()
                    return early
                }
                state.waiting = (id, continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// A status from the server; what it was.
    @discardableResult
    func deliver(success: Bool, message: String?) -> Kind {
        let text = message ?? ""
        if text == Self.chunkAcknowledgement { return .chunkAcknowledged }
        if Self.complaints.contains(text) { return .complaint }
        let waiting = state.withLock { $0.waiting != nil }
        guard waiting else { return .stray }
        if !success && Self.metadataRefusals.contains(text) {
            state.withLock { $0.metadataRefusal = text }
            return .metadataRefused
        }
        let reason = state.withLock { $0.metadataRefusal }
        resolve(
            success && reason == nil ? .stored(text) : .refused(reason ?? (text.isEmpty ? "no reason given" : text)))
        return .answer
    }

    /// The connection ended: the upload in flight is lost, or refused for its size (1009).
    func connectionEnded(tooLarge: Bool, why: String) {
        resolve(tooLarge ? .tooLarge : .lost(why))
    }

    private func resolve(_ outcome: Outcome, only id: UUID? = nil) {
        let continuation: CheckedContinuation<Outcome, Never>?? = state.withLock { state in
            guard let waiting = state.waiting, id == nil || waiting.id == id else { return .none }
            if let continuation = waiting.continuation {
                state = State()
                return .some(continuation)
            }
            if state.early == nil { state.early = outcome }
            return .some(nil)
        }
        if case .some(.some(let continuation)) = continuation { continuation.resume(returning: outcome) }
    }
}
