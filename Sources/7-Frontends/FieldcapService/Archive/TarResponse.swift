import FieldcapArchive
import FieldcapSystem
import Glibc
import Hummingbird
import NIOPosix

/// A directory sent as one streamed tar (`application/x-tar`), named `NAME.tar` for a browser's
/// download. Files are read 1 MiB at a time on NIO's blocking-I/O pool, so a download of a
/// long recording never holds the server's threads or more than a read buffer of memory; the
/// client's pace sets the reads'.
enum TarResponse {
    /// `done` runs once the stream has ended, sent or not (a scratch directory to remove).
    static func directory(_ path: String, name: String, done: @escaping @Sendable () -> Void = {}) throws -> Response {
        let entries: [TarStream.Entry]
        var links: [String] = []
        do {
            entries = try TarStream.entries(directory: path, prefix: name, links: &links)
        } catch {
            done()
            throw APIError(.internalServerError, "reading \(name): \(error)")
        }
        guard links.isEmpty else {
            done()
            throw APIError(
                .conflict,
                "\(name) holds symbolic links "
                    + "(\(links.prefix(5).joined(separator: ", "))\(links.count > 5 ? ", ..." : "")), which an archive "
                    + "does not follow: replace them with the files (cp -L) on the rig, or copy the session there"
            )
        }
        let body = ResponseBody { writer in
            defer { done() }
            let tar = TarStream()
            for listed in entries {
                // Sized as the file is when it is sent, not as it was listed.
                guard let (fd, entry) = try TarStream.open(listed) else { continue }
                defer { close(fd) }
                try await writer.write(ByteBuffer(bytes: try tar.header(entry)))
                try await send(entry, fd: fd, through: tar, to: &writer)
            }
            try await writer.write(ByteBuffer(bytes: try tar.finish()))
            try await writer.finish(nil)
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "application/x-tar",
                .contentDisposition: "attachment; filename=\"\(name).tar\"",
            ],
            body: body)
    }

    /// The entry's bytes, exactly as many as its header says (libarchive pads a file that shrank).
    private static func send(
        _ entry: TarStream.Entry, fd: Int32, through tar: TarStream, to writer: inout any ResponseBodyWriter
    ) async throws {
        var offset: UInt64 = 0
        while offset < entry.size {
            let want = Int(min(UInt64(TarStream.chunkBytes), entry.size - offset))
            let at = offset
            let chunk: [UInt8] = try await NIOThreadPool.singleton.runIfActive {
                var buffer = [UInt8](repeating: 0, count: want)
                let got = buffer.withUnsafeMutableBytes { bytes in
                    SystemCall.retryingInterrupts { pread(fd, bytes.baseAddress, want, off_t(at)) }
                }
                guard got >= 0 else {
                    throw TarStream.Failure(description: "read \(entry.path): \(String(cString: strerror(errno)))")
                }
                return Array(buffer.prefix(got))
            }
            if chunk.isEmpty { break }
            offset += UInt64(chunk.count)
            try await writer.write(ByteBuffer(bytes: try chunk.withUnsafeBytes { try tar.data($0) }))
        }
    }
}
