import Glibc

/// Runs `body` on a named thread of its own that nobody joins: a command's signal watcher or
/// progress line, which ends by itself. Foundation's `Thread` did this and is not in
/// FoundationEssentials; `DedicatedThread` is for threads that are joined.
public func detachThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    var thread = pthread_t()
    let result = pthread_create(
        &thread, nil,
        { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            DedicatedThread.nameCurrentThread(start.name)
            start.body()
            return nil
        }, Unmanaged.passRetained(Start(name: name, body: body)).toOpaque())
    precondition(result == 0, "pthread_create failed: errno \(result)")
    pthread_detach(thread)
}
