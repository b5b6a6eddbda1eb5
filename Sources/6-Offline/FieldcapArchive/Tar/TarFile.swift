import FieldcapSystem
import FoundationEssentials
import Glibc

/// A directory written to a tar file, the same pax stream `TarResponse` sends: for a sender
/// that must announce the size before the bytes (the capture server's two-phase upload).
public enum TarFile {
    /// Writes `directory` as `name/...` into a new file at `path`, 1 MiB at a time; returns its
    /// size. The file is removed if anything fails.
    public static func write(directory: String, name: String, to path: String) throws -> UInt64 {
        var links: [String] = []
        let entries = try TarStream.entries(directory: directory, prefix: name, links: &links)
        guard links.isEmpty else {
            throw TarStream.Failure(
                description:
                    "\(directory) holds symbolic links (\(links.joined(separator: ", "))), which are not archived")
        }
        let out = FileManager.default.createFile(atPath: path, contents: nil) ? open(path, O_WRONLY | O_CLOEXEC) : -1
        guard out >= 0 else {
            throw TarStream.Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        do {
            defer { close(out) }
            let tar = TarStream()
            var size: UInt64 = 0
            func put(_ bytes: [UInt8]) throws {
                try writeFully(bytes, to: out, path: path)
                size += UInt64(bytes.count)
            }
            var chunk = [UInt8](repeating: 0, count: TarStream.chunkBytes)
            for listed in entries {
                // Sized as the file is when it is read, not as it was listed.
                guard let (input, entry) = try TarStream.open(listed) else { continue }
                defer { close(input) }
                try put(try tar.header(entry))
                var left = entry.size
                while left > 0 {
                    let want = Int(min(left, UInt64(chunk.count)))
                    let got = SystemCall.retryingInterrupts {
                        chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, want) }
                    }
                    guard got >= 0 else {
                        throw TarStream.Failure(description: "read \(entry.path): \(String(cString: strerror(errno)))")
                    }
                    guard got > 0 else {
                        throw TarStream.Failure(description: "\(entry.path) shrank while it was archived")
                    }
                    left -= UInt64(got)
                    try put(try chunk.withUnsafeBytes { try tar.data(UnsafeRawBufferPointer(rebasing: $0[..<got])) })
                }
            }
            try put(try tar.finish())
            return size
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }

    private static func writeFully(_ bytes: [UInt8], to fd: Int32, path: String) throws {
        try bytes.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = SystemCall.retryingInterrupts {
                    Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                }
                guard written >= 0 else {
                    throw TarStream.Failure(description: "write \(path): \(String(cString: strerror(errno)))")
                }
                offset += written
            }
        }
    }
}
