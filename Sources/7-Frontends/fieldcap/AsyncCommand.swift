import Dispatch
import Synchronization

/// Runs `body` on Swift's concurrency pool while the calling thread waits: the commands stay
/// synchronous, as every other is (`record` takes its signals on the main thread, blocked in
/// every thread it starts), and the async libraries (the server, the HTTP client) run beneath.
func waitForAsync<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Result<Value, Error>?>(nil)
    Task {
        do {
            let value = try await body()
            result.withLock { $0 = .success(value) }
        } catch {
            result.withLock { $0 = .failure(error) }
        }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0 }!.get()
}
