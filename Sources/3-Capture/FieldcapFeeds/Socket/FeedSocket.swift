import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Where a feed's socket lives, and making it safe to listen there.
///
/// By default in a directory fieldcap owns: `/run/fieldcap/feeds` for root (a service),
/// `$XDG_RUNTIME_DIR/fieldcap/feeds` for a user, made with mode 0750 and given to the `fieldcap`
/// group where the system has one, each socket 0660: programs of that group (the rig's drivers)
/// may feed, nobody else may. A directory there that fieldcap's user does not own is refused,
/// not used: another user could swap the socket under it.
public enum FeedSocket {
    /// The group whose programs may feed a rig's streams.
    public static let group = "fieldcap"

    /// The directory of the sockets not given a `socket=` path.
    public static func defaultDirectory(environment: [String: String]) -> String {
        if SocketFiles.userID == 0 { return "/run/fieldcap/feeds" }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return "\(runtime)/fieldcap/feeds" }
        return "/tmp/fieldcap-\(SocketFiles.userID)/feeds"
    }

    /// A feed's socket path: `socket=` where given, else NAME.sock in the default directory.
    public static func path(name: String, given: String?, environment: [String: String]) -> String {
        given ?? "\(defaultDirectory(environment: environment))/\(name).sock"
    }

    /// Makes the default directory (and its parent) when the socket is in it, takes the feed's
    /// lock (`PATH.lock`, held while the feed is open: a second recording with the same feed is
    /// refused without disturbing the first), and clears a socket file left at `path` by a process
    /// that ended. Refuses a path that is not a socket, or a default directory another user owns.
    /// Returns the lock's descriptor.
    static func prepare(_ path: String, device: String, environment: [String: String]) throws(DeviceError) -> Int32 {
        let directory = PathName.directory(of: path)
        if directory == defaultDirectory(environment: environment) {
            for level in [PathName.directory(of: directory), directory] {
                try ownDirectory(level, device: device)
            }
        }
        guard path.utf8.count <= StreamSocket.maximumPathBytes else {
            throw DeviceError(
                code: .unsupported, device: device, operation: "socket \(path.printable)",
                hint: "a socket path holds at most \(StreamSocket.maximumPathBytes) bytes; give a shorter socket=")
        }
        let lock: Int32
        switch SocketFiles.lock(path + ".lock") {
        case .success(let descriptor): lock = descriptor
        case .failure(let error) where error == .wouldBlock:
            throw DeviceError(
                code: .busy, device: device, operation: "listen at \(path.printable)",
                hint: "another recording has this feed open (\(path.printable).lock is held); stop it or give socket=")
        case .failure(let error):
            throw DeviceError(
                code: error.rawValue == EACCES ? .permissionDenied : .other, device: device,
                operation: "lock \(path.printable).lock", errno: error.rawValue,
                hint: "give socket= a path in a directory fieldcap may write")
        }
        switch SocketFiles.entry(at: path) {
        case .failure(let error):
            SocketFiles.unlock(lock)
            throw DeviceError(code: .other, device: device, operation: "lstat \(path.printable)", errno: error.rawValue)
        case .success(.missing):
            return lock
        case .success(.socket):
            // Ours by the lock: a socket file a killed fieldcap left.
            if let error = SocketFiles.remove(path) {
                SocketFiles.unlock(lock)
                throw DeviceError(
                    code: .other, device: device, operation: "remove the old socket \(path.printable)",
                    errno: error.rawValue)
            }
            return lock
        case .success:
            SocketFiles.unlock(lock)
            throw DeviceError(
                code: .busy, device: device, operation: "listen at \(path.printable)",
                hint: "something that is not a socket is there; remove it or give another socket=")
        }
    }

    /// Makes `directory` fieldcap's own (0750, the fieldcap group), or checks that it is.
    private static func ownDirectory(_ directory: String, device: String) throws(DeviceError) {
        if let error = SocketFiles.makeDirectory(directory, mode: 0o750) {
            throw DeviceError(
                code: error.rawValue == EACCES ? .permissionDenied : .other, device: device,
                operation: "make \(directory)", errno: error.rawValue,
                hint: "give socket= a path in a directory fieldcap may write")
        }
        guard case .success(.directory(let owner, let mode)) = SocketFiles.entry(at: directory),
            owner == SocketFiles.userID
        else {
            throw DeviceError(
                code: .permissionDenied, device: device, operation: "use \(directory)",
                hint: "it is not a directory fieldcap's user owns; remove it or give socket=")
        }
        if mode != 0o750 { _ = SocketFiles.setMode(directory, 0o750) }
        _ = SocketFiles.setGroup(directory, group)
    }

    /// Opens the listening socket at `path` (prepared) for the fieldcap group: mode 0660.
    static func listen(at path: String, device: String) throws(DeviceError) -> StreamSocket {
        let socket: StreamSocket
        switch StreamSocket.listen(at: path) {
        case .success(let listening): socket = listening
        case .failure(let error):
            throw DeviceError(
                code: error.rawValue == EACCES ? .permissionDenied : .other, device: device,
                operation: "listen at \(path.printable)", errno: error.rawValue)
        }
        if let error = SocketFiles.setMode(path, 0o660) {
            socket.close()
            _ = SocketFiles.remove(path)
            throw DeviceError(code: .other, device: device, operation: "chmod \(path.printable)", errno: error.rawValue)
        }
        _ = SocketFiles.setGroup(path, group)
        return socket
    }
}
