import Foundation

/// A directory written to a tar file, the same pax stream `TarResponse` sends: for a sender
/// that must announce the size before the bytes (the capture server's two-phase upload).
public enum TarFile {
    /// Writes `directory` as `name/...` into a new file at `path`, 1 MiB at a time; returns its
    /// size. The file is removed if anything fails.
    public static func write(directory: String, name: String, to path: String) throws -> UInt64 {
        let entries = try TarStream.entries(directory: directory, prefix: name)
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let out = FileHandle(forWritingAtPath: path)
        else { throw TarStream.Failure(description: "cannot create \(path): \(String(cString: strerror(errno)))") }
        do {
            defer { try? out.close() }
            let tar = TarStream()
            var size: UInt64 = 0
            func put(_ bytes: [UInt8]) throws {
                try out.write(contentsOf: bytes)
                size += UInt64(bytes.count)
            }
            for entry in entries {
                try put(try tar.header(entry))
                guard let input = FileHandle(forReadingAtPath: entry.path) else {
                    throw TarStream.Failure(description: "cannot read \(entry.path)")
                }
                defer { try? input.close() }
                var left = entry.size
                while left > 0 {
                    let chunk = try input.read(upToCount: Int(min(left, UInt64(TarResponse.chunkBytes)))) ?? Data()
                    guard !chunk.isEmpty else {
                        throw TarStream.Failure(description: "\(entry.path) shrank while it was archived")
                    }
                    left -= UInt64(chunk.count)
                    try put(try chunk.withUnsafeBytes { try tar.data($0) })
                }
            }
            try put(try tar.finish())
            return size
        } catch {
            try? FileManager.default.removeItem(atPath: path)
            throw error
        }
    }
}
