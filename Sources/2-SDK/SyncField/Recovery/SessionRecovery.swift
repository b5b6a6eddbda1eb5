import FieldcapOutput
import FieldcapSystem
import FoundationEssentials
import Glibc

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Finishing a session whose writer never got to `stop()` (SIGKILL, a power cut): cut the
/// lines that did not reach the disk whole, then write the sync point and manifest that
/// `stop()` would have written.
public enum SessionRecovery {
    /// What trimming did to one file.
    public struct Trim: Equatable, Sendable {
        /// Complete, well-formed lines kept.
        public var keptLines: Int
        /// Bytes removed from the end: a partial line, lines that do not parse (blocks a power
        /// cut left unwritten read back as zeros or old data), lines over the limit.
        public var cutBytes: Int
    }

    /// How far back from the end lines are parsed to find damage. Only data written after the
    /// last `fdatasync` (at most a second of it) can be damaged, and it sits at the end.
    public static let checkedTailBytes = 4 << 20

    /// Keeps the complete, well-formed JSON lines of `path`, at most `limit` of them, and cuts
    /// everything after (truncate and fsync). A missing file is zero lines, untouched.
    public static func trimJSONLines(path: String, limit: Int? = nil) throws -> Trim {
        guard FileManager.default.fileExists(atPath: path) else { return Trim(keptLines: 0, cutBytes: 0) }
        let data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        let newline = UInt8(ascii: "\n")
        var cut = (data.lastIndex(of: newline).map { $0 + 1 }) ?? 0
        // Parse the tail's complete lines; the first that does not parse ends the good part.
        var start = max(0, cut - checkedTailBytes)
        if start > 0, let lineStart = data[..<start].lastIndex(of: newline) { start = lineStart + 1 }
        var position = start
        while position < cut {
            let end = data[position..<cut].firstIndex(of: newline)!
            let line = data[position..<end]
            if line.isEmpty || (try? JSONTextParser.parse(line)) == nil {
                cut = position
                break
            }
            position = end + 1
        }
        var kept = data[..<cut].reduce(0) { $1 == newline ? $0 + 1 : $0 }
        if let limit, kept > limit {
            var seen = 0
            for index in data.indices where data[index] == newline {
                seen += 1
                if seen == limit { cut = index + 1; break }
            }
            if limit == 0 { cut = 0 }
            kept = limit
        }
        let cutBytes = data.count - cut
        if cutBytes > 0 {
            // Never through a symbolic link: recovery changes only the session's own files.
            let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { throw SyncFieldError.ioFailure(path: path, operation: "open", errno: errno) }
            defer { close(fd) }
            guard ftruncate(fd, off_t(cut)) == 0 else {
                throw SyncFieldError.ioFailure(path: path, operation: "ftruncate", errno: errno)
            }
            guard fsync(fd) == 0 else { throw SyncFieldError.ioFailure(path: path, operation: "fsync", errno: errno) }
        }
        return Trim(keptLines: kept, cutBytes: cutBytes)
    }

    /// One timestamp line's values, as `stamp()` takes them.
    public struct TimestampLine: Equatable, Sendable {
        public var captureNs: UInt64
        public var frameNumber: Int
        public var uncertaintyNs: UInt64

        public init(captureNs: UInt64, frameNumber: Int, uncertaintyNs: UInt64) {
            self.captureNs = captureNs
            self.frameNumber = frameNumber
            self.uncertaintyNs = uncertaintyNs
        }
    }

    /// Appends `lines` to `path` (created if missing), spelled byte for byte as the session's
    /// writer spells them with `hostId` as the clock domain, and fsyncs: for lines a crash lost
    /// whose values survived elsewhere (fieldcap's frame log holds each frame's). Call it after
    /// `trimJSONLines`, so they follow whole lines.
    public static func appendTimestampLines(_ lines: [TimestampLine], to path: String, hostId: String) throws {
        guard !lines.isEmpty else { return }
        let encoder = LineEncoder(hostId: hostId)
        let bytes = OutputBytes(capacity: lines.count * 160)
        for line in lines {
            encoder.appendTimestampLine(
                to: bytes, captureNs: line.captureNs, frameNumber: line.frameNumber, uncertaintyNs: line.uncertaintyNs)
        }
        // Never through a symbolic link: recovery changes only the session's own files.
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw SyncFieldError.ioFailure(path: path, operation: "open", errno: errno) }
        defer { close(fd) }
        var offset = 0
        while offset < bytes.count {
            let written = SystemCall.retryingInterrupts {
                write(fd, bytes.bytes.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 { throw SyncFieldError.ioFailure(path: path, operation: "write", errno: errno) }
            offset += written
        }
        guard fsync(fd) == 0 else { throw SyncFieldError.ioFailure(path: path, operation: "fsync", errno: errno) }
    }

    /// Creates `path` empty (0644 less the umask, fsynced) unless something is there.
    private static func createIfMissing(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        if fd < 0 {
            if errno == EEXIST { return }
            throw SyncFieldError.ioFailure(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SyncFieldError.ioFailure(path: path, operation: "fsync", errno: errno) }
    }

    /// Writes `sync_point.json` and `manifest.json` as `stop()` does (atomically, fsynced), and
    /// an empty file for each stream file the manifest names that is missing.
    ///
    /// - Parameters:
    ///   - timestampCounts: lines in each stream's `{id}.timestamps.jsonl` after trimming.
    ///   - recorded: the streams with a `{id}.jsonl` sensor file.
    ///   - links: the paths the streams had `link()`ed.
    public static func finish(
        directory: String, syncPoint: SyncPoint, timestampCounts: [String: Int], recorded: Set<String>,
        links: [String: String]
    ) throws {
        // A stream whose files never reached the disk (a power cut in its first second) is listed
        // with no lines: its files exist, empty, as the manifest names them.
        for id in timestampCounts.keys.sorted() {
            try createIfMissing("\(directory)/\(SyncFieldFiles.timestamps(id))")
            if recorded.contains(id) { try createIfMissing("\(directory)/\(SyncFieldFiles.sensor(id))") }
        }
        let manifest = SessionManifest(
            hostId: syncPoint.hostId, timestampCounts: timestampCounts, recorded: recorded, links: links)
        try SyncSession.writeAtomically(
            syncPoint.jsonValue.sdkPrettyBytes(), to: "\(directory)/\(SyncFieldFiles.syncPoint)")
        try SyncSession.writeAtomically(
            manifest.jsonValue.sdkPrettyBytes(), to: "\(directory)/\(SyncFieldFiles.manifest)")
    }
}
