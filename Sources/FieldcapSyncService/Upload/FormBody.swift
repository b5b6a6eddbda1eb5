import NIOCore
import NIOFileSystem
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
        var file: ReadFileHandle?
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
                        file = try await FileSystem.shared.openFile(forReadingAt: FilePath(path))
                        offset = 0
                    }
                    if offset < size {
                        let want = Int(Swift.min(Int64(FormBody.chunkLength), size - offset))
                        let chunk = try await file!.readChunk(fromAbsoluteOffset: offset, length: .bytes(Int64(want)))
                        guard chunk.readableBytes == want else {
                            try? await file?.close()
                            file = nil
                            throw FormBodyError.fileChanged(
                                path, expected: size, at: offset + Int64(chunk.readableBytes))
                        }
                        offset += Int64(want)
                        sent.add(want)
                        return chunk
                    }
                    try await file?.close()
                    file = nil
                    index += 1
                }
            }
            return nil
        }
    }
}

public enum FormBodyError: Error, CustomStringConvertible {
    case fileChanged(String, expected: Int64, at: Int64)

    public var description: String {
        switch self {
        case .fileChanged(let path, let expected, let at):
            "\(path) changed while it was sent: \(expected) bytes when the upload began, it ended at \(at)"
        }
    }
}
