import FieldcapSystem
import Glibc
import NIOCore
import NIOPosix
import Synchronization

/// A form's bytes as an async sequence of buffers, each file read from disk a chunk at a time
/// only when the connection asks for more: a video is never held in memory, and a slow link
/// slows the reading, not the other way round.
public struct FormBody: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer

    public let form: MultipartForm
    /// Bytes handed to the connection so far (for a progress line).
    public let sent: Progress

    public final class Progress: Sendable {
        private let bytes = Atomic<Int64>(0)
        public init() {}
        public var value: Int64 { bytes.load(ordering: .relaxed) }
        func add(_ count: Int) { bytes.add(Int64(count), ordering: .relaxed) }
        func reset() { bytes.store(0, ordering: .relaxed) }
    }

    static let chunkLength = 1 << 20

    public init(form: MultipartForm, sent: Progress = Progress()) {
        self.form = form
        self.sent = sent
    }

    public func makeAsyncIterator() -> Iterator { Iterator(pieces: form.pieces, sent: sent) }

    public struct Iterator: AsyncIteratorProtocol {
        let pieces: [MultipartForm.Piece]
        let sent: Progress
        var index = 0
        var file: OpenFile?
        var offset: Int64 = 0

        public mutating func next() async throws -> ByteBuffer? {
            while index < pieces.count {
                switch pieces[index] {
                case .bytes(let bytes):
                    index += 1
                    sent.add(bytes.count)
                    return ByteBuffer(bytes: bytes)
                case .file(let path, let size):
                    if file == nil {
                        file = try await OpenFile(path: path)
                        offset = 0
                    }
                    if offset < size {
                        let want = Int(Swift.min(Int64(FormBody.chunkLength), size - offset))
                        let chunk = try await file!.read(at: offset, length: want)
                        guard chunk.readableBytes == want else {
                            file = nil
                            throw FormBodyError.fileChanged(
                                path, expected: size, at: offset + Int64(chunk.readableBytes))
                        }
                        offset += Int64(want)
                        sent.add(want)
                        return chunk
                    }
                    file = nil
                    index += 1
                }
            }
            return nil
        }
    }

    /// A file being sent, read on NIO's thread pool for blocking I/O so that a slow disk does
    /// not stall an event loop. Closed when the last reference goes.
    final class OpenFile: Sendable {
        let path: String
        let descriptor: Int32

        init(path: String) async throws {
            self.path = path
            descriptor = try await NIOThreadPool.singleton.runIfActive {
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw FormBodyError.unreadable(path, errno: errno) }
                return descriptor
            }
        }

        deinit { close(descriptor) }

        /// Up to `length` bytes from `offset`; fewer only at the end of the file.
        func read(at offset: Int64, length: Int) async throws -> ByteBuffer {
            try await NIOThreadPool.singleton.runIfActive { [descriptor, path] in
                var buffer = ByteBufferAllocator().buffer(capacity: length)
                while buffer.readableBytes < length {
                    let have = buffer.readableBytes
                    let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: length - have) { space in
                        let count = SystemCall.retryingInterrupts {
                            pread(descriptor, space.baseAddress, length - have, off_t(offset) + off_t(have))
                        }
                        guard count >= 0 else { throw FormBodyError.unreadable(path, errno: errno) }
                        return count
                    }
                    if count == 0 { break }
                }
                return buffer
            }
        }
    }
}

public enum FormBodyError: Error, CustomStringConvertible {
    case fileChanged(String, expected: Int64, at: Int64)
    case unreadable(String, errno: Int32)

    public var description: String {
        switch self {
        case .fileChanged(let path, let expected, let at):
            "\(path) changed while it was sent: \(expected) bytes when the upload began, it ended at \(at)"
        case .unreadable(let path, let code):
            "\(path) could not be read: \(String(cString: strerror(code))) (errno \(code))"
        }
    }
}
