import CAvahi

/// libavahi-client's connection to the system's avahi-daemon, on Avahi's own event thread:
/// without a daemon it waits for one (`AVAHI_CLIENT_NO_FAIL`), and `stateChanged` hears each
/// change on that thread, under its lock, as do the callbacks of what is made on the client.
final class AvahiSession: @unchecked Sendable {
    private(set) var client: OpaquePointer?
    private var poll: OpaquePointer?
    private let stateChanged: (OpaquePointer, AvahiClientState) -> Void

    init(stateChanged: @escaping (OpaquePointer, AvahiClientState) -> Void) {
        self.stateChanged = stateChanged
    }

    /// Throws only when Avahi cannot run at all (no event thread, no client library state).
    func start() throws(DiscoveryError) {
        guard let poll = avahi_threaded_poll_new() else {
            throw DiscoveryError("Avahi could not start its event thread")
        }
        self.poll = poll
        var error: Int32 = 0
        let context = Unmanaged.passUnretained(self).toOpaque()
        client = avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, context in
                guard let client, let context else { return }
                Unmanaged<AvahiSession>.fromOpaque(context).takeUnretainedValue().stateChanged(client, state)
            }, context, &error)
        guard client != nil else {
            avahi_threaded_poll_free(poll)
            self.poll = nil
            throw DiscoveryError("Avahi: \(String(cString: avahi_strerror(error)))")
        }
        guard avahi_threaded_poll_start(poll) == 0 else {
            throw DiscoveryError("Avahi could not start its event thread")
        }
    }

    /// Ends the event thread; `release` frees what was made on the client (an entry group, a
    /// browser) before the client itself goes.
    func stop(release: () -> Void) {
        guard let poll else { return }
        avahi_threaded_poll_stop(poll)
        release()
        if let client { avahi_client_free(client) }
        avahi_threaded_poll_free(poll)
        self.poll = nil
        client = nil
    }
}
