import CArchive
import FoundationEssentials
import Glibc

/// A directory as a POSIX tar stream (pax, so files over 8 GiB and long names stay exact),
/// written by libarchive a piece at a time: each call returns the bytes it produced, for the
/// caller to send before it reads on. Nothing is staged: memory stays at one read buffer.
public final class TarStream {
    /// How much of a file is read and sent at a time.
    public static let chunkBytes = 1 << 20

    /// A file to put in the stream, under `name`.
    public struct Entry: Sendable {
        public var name: String
        public var path: String
        public var size: UInt64
        public var modified: timespec
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) { self.description = description }
    }

    private let archive: OpaquePointer
    /// What libarchive wrote since the last `take`.
    private var produced: [UInt8] = []

    public init() {
        archive = archive_write_new()
        archive_write_set_format_pax_restricted(archive)
        // Unblocked: libarchive hands over each piece as it is made, instead of 10 KiB records.
        archive_write_set_bytes_per_block(archive, 0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        archive_write_open(
            archive, context, nil,
            { _, context, buffer, length in
                guard let context, let buffer else { return -1 }
                let stream = Unmanaged<TarStream>.fromOpaque(context).takeUnretainedValue()
                stream.produced.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
                return length
            }, nil)
    }

    deinit { archive_write_free(archive) }

    /// Every regular file under `directory`, depth first in name order, named `prefix/relative`.
    /// Symbolic links are not followed (one could lead out of the root): each goes into `links`,
    /// as `prefix/relative`, for the caller to report.
    public static func entries(directory: String, prefix: String, links: inout [String]) throws -> [Entry] {
        var entries: [Entry] = []
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        for name in names {
            let path = "\(directory)/\(name)"
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                entries.append(
                    Entry(name: "\(prefix)/\(name)", path: path, size: UInt64(info.st_size), modified: info.st_mtim))
            case S_IFDIR:
                entries += try self.entries(directory: path, prefix: "\(prefix)/\(name)", links: &links)
            case S_IFLNK:
                links.append("\(prefix)/\(name)")
            default:
                continue  // devices, sockets, FIFOs: fieldcap writes none, and none can be read as a file
            }
        }
        return entries
    }

    /// Opens the entry's file for sending, and takes its size and time from the open file: a file
    /// replaced since the listing (a sidecar rewritten whole, as `check-sync --save` does) is sent
    /// whole, as it is now, with the header saying so. Nil when the file is gone (a temporary one
    /// renamed away); throws when it cannot be read.
    public static func open(_ entry: Entry) throws -> (descriptor: Int32, entry: Entry)? {
        let descriptor = Glibc.open(entry.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure(description: "open \(entry.path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw Failure(description: "\(entry.path) is no longer a regular file")
        }
        var now = entry
        now.size = UInt64(info.st_size)
        now.modified = info.st_mtim
        return (descriptor, now)
    }

    /// The header of a file of `entry.size` bytes; its data follows through `data`.
    public func header(_ entry: Entry) throws -> [UInt8] {
        let header = archive_entry_new()
        defer { archive_entry_free(header) }
        archive_entry_set_pathname(header, entry.name)
        archive_entry_set_size(header, Int64(entry.size))
        archive_entry_set_filetype(header, 0o100000)  // AE_IFREG: a regular file
        archive_entry_set_perm(header, 0o644)
        archive_entry_set_mtime(header, entry.modified.tv_sec, entry.modified.tv_nsec)
        try check(archive_write_header(archive, header), "writing the header of \(entry.name)")
        return take()
    }

    public func data(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8] {
        guard bytes.count > 0 else { return [] }
        let written = archive_write_data(archive, bytes.baseAddress, bytes.count)
        if written < 0 { try check(Int32(written), "writing data") }
        return take()
    }

    /// The end of the last file (its padding) and of the archive (two zero records).
    public func finish() throws -> [UInt8] {
        try check(archive_write_close(archive), "finishing the archive")
        return take()
    }

    private func take() -> [UInt8] {
        defer { produced.removeAll(keepingCapacity: true) }
        return produced
    }

    private func check(_ status: Int32, _ what: String) throws {
        guard status < ARCHIVE_WARN else { return }
        let message = archive_error_string(archive).map { String(cString: $0) } ?? "status \(status)"
        throw Failure(description: "tar: \(what): \(message)")
    }
}
