import ArgumentParser
import Foundation

/// Where a recording goes: a directory made for it, never one that exists.
enum SessionDirectory {
    /// Creates `explicit`, or `root/HOST-YYYYMMDDTHHMMSSZ` (with `-2`, `-3`... if that is taken).
    static func create(explicit: String?, root: String, hostId: String, at date: Date) throws -> String {
        if let explicit {
            let parent = (explicit as NSString).deletingLastPathComponent
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
        throw ValidationError("--root \(root): could not find a free session directory name")
    }

    private static func makeParents(_ path: String, for what: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw ValidationError("\(what): cannot create \(path): \(error.localizedDescription)")
        }
    }

    private static func makeNew(_ path: String, for what: String) throws {
        guard mkdir(path, 0o755) == 0 else { throw failure(path, what, errno) }
    }

    private static func failure(_ path: String, _ what: String, _ code: Int32) -> Error {
        let reason = String(cString: strerror(code))
        switch code {
        case EEXIST: return ValidationError("\(what) \(path) already exists; fieldcap never writes into an existing directory")
        case EACCES, EPERM, EROFS: return ValidationError("\(what) \(path): \(reason); choose a directory you can write to")
        default: return ValidationError("\(what) \(path): cannot create it: \(reason) (errno \(code))")
        }
    }
}

/// Blocks signals for the whole process and takes them synchronously, in one place.
final class SignalWaiter {
    private var set = sigset_t()

    /// Blocks `signals` in the calling thread; threads started afterwards inherit the mask.
    init(signals: [Int32]) {
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `seconds` for one of the signals; returns it, or nil on time-out.
    func wait(seconds: Double) -> Int32? {
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let received = sigtimedwait(&set, nil, &timeout)
        return received > 0 ? received : nil
    }
}
