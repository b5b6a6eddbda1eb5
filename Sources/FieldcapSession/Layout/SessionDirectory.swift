import FieldcapCore
import Foundation
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
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let base = "\(root)/\(hostId)-\(formatter.string(from: date))"
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
            throw SessionDirectoryError(message: "\(what): cannot create \(path): \(error.localizedDescription)")
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
