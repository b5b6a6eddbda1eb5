import FieldcapCore
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// Why a session directory could not be made: one line naming the option and the path.
public struct SessionDirectoryError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// Where a recording goes: a directory made for it, never one that exists.
public enum SessionDirectory {
    /// Creates `explicit`, or `root/HOST-YYYYMMDDTHHMMSSZ` (with `-2`, `-3`... if that is taken).
    public static func create(explicit: String?, root: String, hostId: String, at date: Date) throws -> String {
        if let explicit {
            let parent = PathName.directory(of: explicit)
            if !parent.isEmpty { try makeParents(parent, for: "--out \(explicit)") }
            try makeNew(explicit, for: "--out")
            return explicit
        }
        try makeParents(root, for: "--root \(root)")
        // `2024-03-08T09:28:21.123Z` as `20240308T092821Z`.
        let iso = SyncPoint.isoDatetime(wallClockNs: UInt64(max(0, date.timeIntervalSince1970) * 1e9))
        let base = "\(root)/\(hostId)-\(iso.prefix(19).filter { $0 != "-" && $0 != ":" })Z"
        for attempt in 1...100 {
            let path = attempt == 1 ? base : "\(base)-\(attempt)"
            if mkdir(path, 0o755) == 0 { return path }
            if errno != EEXIST { throw failure(path, "--root", errno) }
        }
        throw SessionDirectoryError(message: "--root \(root): could not find a free session directory name")
    }

    private static func makeParents(_ path: String, for what: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw SessionDirectoryError(message: "\(what): cannot create \(path): \(errorText(error))")
        }
    }

    private static func makeNew(_ path: String, for what: String) throws {
        guard mkdir(path, 0o755) == 0 else { throw failure(path, what, errno) }
    }

    private static func failure(_ path: String, _ what: String, _ code: Int32) -> Error {
        let reason = String(cString: strerror(code))
        switch code {
        case EEXIST:
            return SessionDirectoryError(
                message: "\(what) \(path) already exists; fieldcap never writes into an existing directory")
        case EACCES, EPERM, EROFS:
            return SessionDirectoryError(message: "\(what) \(path): \(reason); choose a directory you can write to")
        default: return SessionDirectoryError(message: "\(what) \(path): cannot create it: \(reason) (errno \(code))")
        }
    }
}
