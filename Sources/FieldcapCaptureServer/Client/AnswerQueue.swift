import FoundationEssentials
import Synchronization

/// The server's answers to uploads, handed to the uploads in the order they were sent (the
/// protocol's `{"status":...}` names no upload: the first waiting is the one answered). A
/// connection that ends answers every waiting upload with nil: lost, to be sent again.
final class AnswerQueue: Sendable {
    struct Answer: Sendable, Equatable {
        var success: Bool
        var message: String?
    }

    private struct State {
        var order: [UUID] = []
        var arrived: [UUID: Answer?] = [:]
        var waiting: [UUID: CheckedContinuation<Answer?, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Takes a place in the queue: before the upload is sent, so an answer that comes quickly
    /// is not lost.
    func register() -> UUID {
        let id = UUID()
        state.withLock { $0.order.append(id) }
        return id
    }

    /// The answer for `id`, or nil when the connection ended or `timeout` passed first.
    func answer(_ id: UUID, timeout: Duration) async -> Answer? {
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { resolve(id, with: nil) }
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready: Answer?? = state.withLock { state in
                if let answer = state.arrived.removeValue(forKey: id) { return .some(answer) }
                state.waiting[id] = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// A status from the server: the first upload still waiting gets it. False when none waits.
    func deliver(_ answer: Answer) -> Bool {
        guard let id = state.withLock({ $0.order.first }) else { return false }
        resolve(id, with: answer)
        return true
    }

    /// The connection ended: every upload waiting is lost.
    func failAll() {
        for id in state.withLock({ $0.order }) { resolve(id, with: nil) }
    }

    private func resolve(_ id: UUID, with answer: Answer?) {
        let continuation: CheckedContinuation<Answer?, Never>? = state.withLock { state in
            guard let index = state.order.firstIndex(of: id) else { return nil }
            state.order.remove(at: index)
            if let waiting = state.waiting.removeValue(forKey: id) { return waiting }
            state.arrived[id] = .some(answer)
            return nil
        }
        continuation?.resume(returning: answer)
    }
}
