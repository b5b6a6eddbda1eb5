import CFieldcapLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A stream socket: a Unix-domain one (`AF_UNIX`, a local feed's) or a TCP connection (gpsd's),
/// the calls each makes with its errno as a value, interrupts retried by `SystemCall`'s policy.
///
/// Owns its descriptor: `close` once. Thread-bound (the thread that reads or accepts on it).
public struct StreamSocket: Sendable {
    public let descriptor: Int32

    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// The longest path a socket address holds (`sun_path`, with its terminating zero).
    public static let maximumPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A socket listening at `path`, non-blocking, closed on exec. The path must not exist.
    public static func listen(at path: String, backlog: Int32 = 4) -> Result<StreamSocket, Errno> {
        let made = SystemCall.valueOrErrno {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        guard case .success(let descriptor) = made else { return made.map { StreamSocket(descriptor: $0) } }
        let socket = StreamSocket(descriptor: descriptor)
        let bound = withAddress(path) { address, length in Glibc.bind(descriptor, address, length) }
        if bound != 0 {
            let error = bound == -2 ? Errno(ENAMETOOLONG) : Errno.current
            socket.close()
            return .failure(error)
        }
        if Glibc.listen(descriptor, backlog) != 0 {
            let error = Errno.current
            socket.close()
            _ = Glibc.unlink(path)
            return .failure(error)
        }
        return .success(socket)
    }

    /// A socket listening at `name` in the abstract namespace (Linux: no file, gone with the
    /// process, seen by the processes of this network namespace), non-blocking, closed on exec.
    /// `name` must not be in use.
    public static func listen(abstract name: String, backlog: Int32 = 4) -> Result<StreamSocket, Errno> {
        let made = SystemCall.valueOrErrno {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        guard case .success(let descriptor) = made else { return made.map { StreamSocket(descriptor: $0) } }
        let socket = StreamSocket(descriptor: descriptor)
        let bound = withAbstractAddress(name) { address, length in Glibc.bind(descriptor, address, length) }
        if bound != 0 || Glibc.listen(descriptor, backlog) != 0 {
            let error = bound == -2 ? Errno(ENAMETOOLONG) : Errno.current
            socket.close()
            return .failure(error)
        }
        return .success(socket)
    }

    /// A socket connected to the one listening at `name` in the abstract namespace, blocking.
    public static func connect(abstract name: String) -> Result<StreamSocket, Errno> {
        let made = SystemCall.valueOrErrno {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        guard case .success(let descriptor) = made else { return made.map { StreamSocket(descriptor: $0) } }
        let socket = StreamSocket(descriptor: descriptor)
        let connected = withAbstractAddress(name) { address, length in Glibc.connect(descriptor, address, length) }
        if connected != 0 {
            let error = connected == -2 ? Errno(ENAMETOOLONG) : Errno.current
            socket.close()
            return .failure(error)
        }
        return .success(socket)
    }

    /// The user id of the process at the other end (`SO_PEERCRED`).
    public var peerUserID: UInt32? {
        let uid = CFieldcapLinux_peer_uid(descriptor)
        return uid < 0 ? nil : UInt32(uid)
    }

    /// This process's effective user id and group id.
    public static var userID: UInt32 { geteuid() }
    public static var groupID: UInt32 { getegid() }

    /// Whether the process at the other end is in group `gid` (its primary group or another).
    public func peerIsInGroup(_ gid: UInt32) -> Bool { CFieldcapLinux_peer_in_group(descriptor, gid) == 1 }

    /// Calls `body` with `name` as an abstract socket address (a zero byte, then the name); -2 when
    /// the name does not fit.
    private static func withAbstractAddress(
        _ name: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(name.utf8)
        guard bytes.count < maximumPathBytes else { return -2 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw[0] = 0
            for (index, byte) in bytes.enumerated() { raw[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    /// A socket connected to the one listening at `path`, blocking, closed on exec.
    public static func connect(to path: String) -> Result<StreamSocket, Errno> {
        let made = SystemCall.valueOrErrno {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        guard case .success(let descriptor) = made else { return made.map { StreamSocket(descriptor: $0) } }
        let socket = StreamSocket(descriptor: descriptor)
        // A connect interrupted goes on in the kernel: not retried (connect(2)), reported.
        let connected = withAddress(path) { address, length in Glibc.connect(descriptor, address, length) }
        if connected != 0 {
            let error = connected == -2 ? Errno(ENAMETOOLONG) : Errno.current
            socket.close()
            return .failure(error)
        }
        return .success(socket)
    }

    /// A non-blocking TCP connection to `host` (a name or an address) at `port`, closed on exec,
    /// made within `timeoutMs`; each of the host's addresses tried in turn.
    public static func connect(host: String, port: UInt16, timeoutMs: Int32) -> Result<StreamSocket, Errno> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            return .failure(Errno(EHOSTUNREACH))
        }
        defer { freeaddrinfo(first) }
        var lastError = Errno(ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let made = SystemCall.valueOrErrno {
                Glibc.socket(
                    address.pointee.ai_family,
                    Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
            }
            guard case .success(let descriptor) = made else { continue }
            let socket = StreamSocket(descriptor: descriptor)
            if Glibc.connect(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                return .success(socket)
            }
            lastError = .current
            if lastError.rawValue == EINPROGRESS {
                // Connecting: writable once it is done, one way or the other (connect(2)).
                var descriptors = [pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)]
                if case .success(let ready) = poll(&descriptors, timeoutMs: timeoutMs), ready > 0 {
                    var failure: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
                    if failure == 0 { return .success(socket) }
                    lastError = Errno(failure)
                } else {
                    lastError = Errno(ETIMEDOUT)
                }
            }
            socket.close()
        }
        return .failure(lastError)
    }

    /// The next connection waiting, non-blocking and closed on exec; `.wouldBlock` when none.
    public func accept() -> Result<StreamSocket, Errno> {
        SystemCall.valueOrErrno { CFieldcapLinux_accept_nonblocking(descriptor) }
            .map { StreamSocket(descriptor: $0) }
    }

    /// Reads what has arrived, up to `buffer`'s size: the count, 0 at the peer's end, or the errno
    /// (`.wouldBlock` when nothing has).
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        SystemCall.valueOrErrno { recv(descriptor, buffer.baseAddress, buffer.count, 0) }
    }

    /// Writes all of `bytes`, waiting as a blocking socket does; never raises SIGPIPE.
    public func send(_ bytes: UnsafeRawBufferPointer) -> Errno? {
        var sent = 0
        while sent < bytes.count {
            let result = SystemCall.valueOrErrno {
                Glibc.send(descriptor, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
            }
            switch result {
            case .success(let count): sent += count
            case .failure(let error): return error
            }
        }
        return nil
    }

    /// Writes what fits now, without waiting (a note to a peer that may not read it).
    public func sendWithoutWaiting(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            _ = SystemCall.retryingInterrupts {
                Glibc.send(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
        }
    }

    /// Ends sending: the peer reads its end once it has read what came before.
    public func shutdownWriting() { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    /// Never retried (`SystemCall`).
    public func close() { _ = Glibc.close(descriptor) }

    /// Calls `body` with `path` as a socket address; -2 when the path does not fit. A path longer
    /// than a socket address holds (a recording deep in a file system) is reached through its
    /// directory, opened for the call: `/proc/self/fd/N/NAME`, which the kernel resolves as it does
    /// the path itself.
    private static func withAddress(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        if path.utf8.count > maximumPathBytes, let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let directory = Glibc.open(String(path[..<slash]), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard directory >= 0 else { return -1 }
            defer { Glibc.close(directory) }
            return withShortAddress("/proc/self/fd/\(directory)" + path[slash...], body)
        }
        return withShortAddress(path, body)
    }

    private static func withShortAddress(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count <= maximumPathBytes, !bytes.contains(0) else { return -2 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}

extension StreamSocket {
    /// Waits until one of `descriptors` is ready as its `events` ask, up to `timeoutMs` (-1:
    /// without limit); sets each `revents`. Returns how many are ready, 0 at the time-out.
    public static func poll(_ descriptors: inout [pollfd], timeoutMs: Int32) -> Result<Int32, Errno> {
        descriptors.withUnsafeMutableBufferPointer { buffer in
            SystemCall.valueOrErrno { Glibc.poll(buffer.baseAddress, nfds_t(buffer.count), timeoutMs) }
        }
    }

}

/// The directory a local socket lives in, and the socket file's own permissions: calls on paths
/// that a socket's owner makes.
public enum SocketFiles {
    /// What is at a path, as `lstat` says (a link is not followed).
    public enum Entry: Equatable, Sendable {
        case missing
        case socket
        case directory(owner: UInt32, mode: UInt32)
        case other
    }

    public static func entry(at path: String) -> Result<Entry, Errno> {
        var info = stat()
        if lstat(path, &info) != 0 {
            return errno == ENOENT ? .success(.missing) : .failure(.current)
        }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK: return .success(.socket)
        case S_IFDIR: return .success(.directory(owner: info.st_uid, mode: info.st_mode & 0o7777))
        default: return .success(.other)
        }
    }

    /// Makes a directory with `mode` (the umask applies; `setMode` makes it exact).
    public static func makeDirectory(_ path: String, mode: UInt32) -> Errno? {
        mkdir(path, mode) == 0 || errno == EEXIST ? nil : .current
    }

    public static func setMode(_ path: String, _ mode: UInt32) -> Errno? {
        chmod(path, mode) == 0 ? nil : .current
    }

    /// Gives `path` to the group `group` (kept as it is when there is no such group); the group
    /// set, or nil when there is none. Throws what `chown` said when the group exists.
    public static func setGroup(_ path: String, _ group: String) -> Result<String?, Errno> {
        guard let entry = getgrnam(group) else { return .success(nil) }
        return chown(path, UInt32.max, entry.pointee.gr_gid) == 0 ? .success(group) : .failure(.current)
    }

    /// Takes an exclusive `flock` on the file at `path` (made, mode 0600, if missing; a link is
    /// not followed): the descriptor holding it, `.wouldBlock` while another process holds it.
    /// The lock goes with the descriptor (`close`) or the process.
    public static func lock(_ path: String) -> Result<Int32, Errno> {
        let opened = SystemCall.valueOrErrno { open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        guard case .success(let descriptor) = opened else { return opened }
        if case .failure(let error) = SystemCall.valueOrErrno({ flock(descriptor, LOCK_EX | LOCK_NB) }) {
            Glibc.close(descriptor)
            return .failure(error == Errno(EWOULDBLOCK) ? .wouldBlock : error)
        }
        return .success(descriptor)
    }

    /// Releases a lock `lock` took.
    public static func unlock(_ descriptor: Int32) { Glibc.close(descriptor) }

    /// The device and inode at `path` (a link not followed), to know later whether it is still
    /// the same file.
    public static func identity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    public static func remove(_ path: String) -> Errno? {
        unlink(path) == 0 || errno == ENOENT ? nil : .current
    }

    /// The effective user.
    public static var userID: UInt32 { geteuid() }
}
