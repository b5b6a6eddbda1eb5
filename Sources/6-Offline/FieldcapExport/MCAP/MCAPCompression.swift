import CLZ4
import CZstd

/// How an MCAP file's chunks are compressed: the two codecs the specification names, through
/// their own C libraries (libzstd, liblz4's frame format), or none.
public enum MCAPCompression: String, Sendable, CaseIterable {
    case zstd
    case lz4
    case none

    /// The Chunk record's `compression` field: "" for none.
    var name: String { self == .none ? "" : rawValue }

    func compressor() -> Compressor { Compressor(kind: self) }

    /// One codec's state, reused chunk after chunk. Thread-bound.
    final class Compressor {
        let kind: MCAPCompression
        private let zstdContext: OpaquePointer?
        private var output: [UInt8] = []

        init(kind: MCAPCompression) {
            self.kind = kind
            zstdContext = kind == .zstd ? ZSTD_createCCtx() : nil
        }

        deinit { if let zstdContext { ZSTD_freeCCtx(zstdContext) } }

        func compress(_ input: [UInt8]) throws(ExportError) -> [UInt8] {
            switch kind {
            case .none: return input
            case .zstd:
                let bound = ZSTD_compressBound(input.count)
                if output.count < bound { output = [UInt8](repeating: 0, count: bound) }
                // Level 1: frames compress little; the fastest level keeps the export at disk speed.
                let size = input.withUnsafeBytes { source in
                    output.withUnsafeMutableBytes { target in
                        ZSTD_compressCCtx(
                            zstdContext, target.baseAddress, target.count, source.baseAddress, source.count, 1)
                    }
                }
                if ZSTD_isError(size) != 0 {
                    throw ExportError(.output, "zstd: \(String(cString: ZSTD_getErrorName(size)))")
                }
                return Array(output[0..<size])
            case .lz4:
                let bound = LZ4F_compressFrameBound(input.count, nil)
                if output.count < bound { output = [UInt8](repeating: 0, count: bound) }
                let size = input.withUnsafeBytes { source in
                    output.withUnsafeMutableBytes { target in
                        LZ4F_compressFrame(target.baseAddress, target.count, source.baseAddress, source.count, nil)
                    }
                }
                if LZ4F_isError(size) != 0 {
                    throw ExportError(.output, "lz4: \(String(cString: LZ4F_getErrorName(size)))")
                }
                return Array(output[0..<size])
            }
        }
    }
}
