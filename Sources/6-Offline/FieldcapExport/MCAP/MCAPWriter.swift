import CZlib

/// Writes one MCAP file (mcap.dev/spec) in the layout every reader takes (Python `mcap`,
/// `mcap-ros2-support`, `rosbags`, Foxglove, `ros2 bag`): schemas and channels in the data section
/// before their first message, messages in chunks of about `chunkBytes`, each chunk followed by
/// one MessageIndex per channel in it (readers that seek need them: without, Python `mcap` finds
/// no messages), metadata records, DataEnd with the data section's CRC, then a summary of
/// Schema, Channel, Statistics, ChunkIndex and MetadataIndex records grouped by opcode, the
/// SummaryOffsets, and the Footer with the summary's CRC.
///
/// The foxglove/mcap repository's Swift writer (`swift/mcap`) is marked experimental and is
/// not among the packages this project builds with, so this is written from the specification.
///
/// Thread-bound (the exporter's).
final class MCAPWriter {
    struct Options {
        var profile: String
        var library: String
        var compression: MCAPCompression = .zstd
        /// Messages are gathered until a chunk holds this many bytes (a frame larger than it
        /// makes a chunk of its own).
        var chunkBytes: Int = 4 << 20
    }

    static let magic: [UInt8] = [0x89, 0x4D, 0x43, 0x41, 0x50, 0x30, 0x0D, 0x0A]

    private let file: ExportFile
    private let options: Options
    private var compressor: MCAPCompression.Compressor
    /// CRC-32 of every byte written to the data section so far, from the leading magic on.
    private var dataCRC: UInt = 0

    private var schemas: [MCAPRecordBytes] = []
    private var channels: [MCAPRecordBytes] = []
    private var channelMessageCounts: [UInt16: UInt64] = [:]
    /// Messages written, and the first and last log time among them.
    private(set) var messageCount: UInt64 = 0
    private(set) var firstMessageTime: UInt64?
    private(set) var lastMessageTime: UInt64 = 0

    private var chunk = MCAPRecordBytes()
    private var chunkStart: UInt64 = .max
    private var chunkEnd: UInt64 = 0
    /// Per channel in the open chunk: (log time, offset in the chunk's records) of each message.
    private var chunkIndexEntries: [UInt16: [(UInt64, UInt64)]] = [:]
    private var chunkIndexes: [MCAPRecordBytes] = []
    private var metadataIndexes: [MCAPRecordBytes] = []

    init(path: String, options: Options) throws(ExportError) {
        file = try ExportFile(creating: path)
        self.options = options
        compressor = options.compression.compressor()
        try writeData(Self.magic)
        try writeData(
            MCAPRecordBytes.record(.header) {
                $0.string(options.profile)
                $0.string(options.library)
            }.bytes)
    }

    /// Adds a schema (`ros2msg` text, say) and returns its id (from 1: 0 means "no schema").
    func addSchema(name: String, encoding: String, data: [UInt8]) throws(ExportError) -> UInt16 {
        let id = UInt16(schemas.count + 1)
        let record = MCAPRecordBytes.record(.schema) {
            $0.u16(id)
            $0.string(name)
            $0.string(encoding)
            $0.byteArray(data)
        }
        schemas.append(record)
        try writeData(record.bytes)
        return id
    }

    /// Adds a channel and returns its id.
    func addChannel(
        topic: String, messageEncoding: String, schema: UInt16, metadata: [String: String] = [:]
    )
        throws(ExportError) -> UInt16
    {
        let id = UInt16(channels.count)
        let record = MCAPRecordBytes.record(.channel) {
            $0.u16(id)
            $0.u16(schema)
            $0.string(topic)
            $0.string(messageEncoding)
            $0.stringMap(metadata)
        }
        channels.append(record)
        channelMessageCounts[id] = 0
        try writeData(record.bytes)
        return id
    }

    /// Adds a metadata record (name and string pairs) to the data section, indexed in the summary.
    func addMetadata(name: String, _ metadata: [String: String]) throws(ExportError) {
        try closeChunk()
        let record = MCAPRecordBytes.record(.metadata) {
            $0.string(name)
            $0.stringMap(metadata)
        }
        let offset = file.position
        try writeData(record.bytes)
        metadataIndexes.append(
            MCAPRecordBytes.record(.metadataIndex) {
                $0.u64(offset)
                $0.u64(UInt64(record.count))
                $0.string(name)
            })
    }

    /// One message; `encode` appends its payload (CDR, say) to the chunk directly, so a frame is
    /// copied once on its way into the file.
    func addMessage(
        channel: UInt16, sequence: UInt32, logTime: UInt64, publishTime: UInt64,
        payload encode: (inout [UInt8]) -> Void
    ) throws(ExportError) {
        let offset = UInt64(chunk.count)
        chunk.u8(MCAPOpcode.message.rawValue)
        let lengthAt = chunk.count
        chunk.u64(0)
        let contentStart = chunk.count
        chunk.u16(channel)
        chunk.u32(sequence)
        chunk.u64(logTime)
        chunk.u64(publishTime)
        encode(&chunk.bytes)
        let length = UInt64(chunk.count - contentStart).littleEndian
        withUnsafeBytes(of: length) { raw in
            for index in 0..<8 { chunk.bytes[lengthAt + index] = raw[index] }
        }
        chunkIndexEntries[channel, default: []].append((logTime, offset))
        chunkStart = min(chunkStart, logTime)
        chunkEnd = max(chunkEnd, logTime)
        channelMessageCounts[channel, default: 0] += 1
        messageCount += 1
        firstMessageTime = min(firstMessageTime ?? logTime, logTime)
        lastMessageTime = max(lastMessageTime, logTime)
        if chunk.count >= options.chunkBytes { try closeChunk() }
    }

    /// Closes the last chunk, writes DataEnd, the summary, its offsets, the footer and the
    /// closing magic, and syncs the file.
    func finish() throws(ExportError) {
        try closeChunk()
        let dataEnd = MCAPRecordBytes.record(.dataEnd) { $0.u32(UInt32(dataCRC)) }
        try file.write(dataEnd.bytes)

        let summaryStart = file.position
        var summaryCRC: UInt = 0
        var offsets: [MCAPRecordBytes] = []
        func group(_ opcode: MCAPOpcode, _ records: [MCAPRecordBytes]) throws(ExportError) {
            guard !records.isEmpty else { return }
            let start = file.position
            for record in records {
                summaryCRC = crc(summaryCRC, record.bytes)
                try file.write(record.bytes)
            }
            offsets.append(
                MCAPRecordBytes.record(.summaryOffset) {
                    $0.u8(opcode.rawValue)
                    $0.u64(start)
                    $0.u64(file.position - start)
                })
        }
        try group(.schema, schemas)
        try group(.channel, channels)
        try group(.statistics, [statistics])
        try group(.chunkIndex, chunkIndexes)
        try group(.metadataIndex, metadataIndexes)
        let summaryOffsetStart = file.position
        for record in offsets {
            summaryCRC = crc(summaryCRC, record.bytes)
            try file.write(record.bytes)
        }
        // The footer's CRC covers the summary, the offsets and the footer up to the CRC itself.
        var footer = MCAPRecordBytes()
        footer.u8(MCAPOpcode.footer.rawValue)
        footer.u64(8 + 8 + 4)
        footer.u64(summaryStart)
        footer.u64(summaryOffsetStart)
        summaryCRC = crc(summaryCRC, footer.bytes)
        footer.u32(UInt32(summaryCRC))
        try file.write(footer.bytes)
        try file.write(Self.magic)
        try file.finish()
    }

    private var statistics: MCAPRecordBytes {
        MCAPRecordBytes.record(.statistics) {
            $0.u64(messageCount)
            $0.u16(UInt16(schemas.count))
            $0.u32(UInt32(channels.count))
            $0.u32(0)  // attachments
            $0.u32(UInt32(metadataIndexes.count))
            $0.u32(UInt32(chunkIndexes.count))
            $0.u64(firstMessageTime ?? 0)
            $0.u64(lastMessageTime)
            var counts = MCAPRecordBytes()
            for (channel, count) in channelMessageCounts.sorted(by: { $0.key < $1.key }) {
                counts.u16(channel)
                counts.u64(count)
            }
            $0.u32(UInt32(counts.count))
            $0.bytes.append(contentsOf: counts.bytes)
        }
    }

    /// Writes the open chunk, then its message indexes, and keeps its ChunkIndex for the summary.
    private func closeChunk() throws(ExportError) {
        guard chunk.count > 0 else { return }
        let uncompressed = chunk.bytes
        let compressed = try compressor.compress(uncompressed)
        let chunkOffset = file.position
        var content = MCAPRecordBytes()
        content.u64(chunkStart)
        content.u64(chunkEnd)
        content.u64(UInt64(uncompressed.count))
        content.u32(UInt32(crc(0, uncompressed)))
        content.string(options.compression.name)
        content.u64(UInt64(compressed.count))
        var header = MCAPRecordBytes()
        header.u8(MCAPOpcode.chunk.rawValue)
        header.u64(UInt64(content.count + compressed.count))
        try writeData(header.bytes)
        try writeData(content.bytes)
        try writeData(compressed)
        let chunkLength = file.position - chunkOffset

        let indexesStart = file.position
        var indexOffsets = MCAPRecordBytes()
        for (channel, entries) in chunkIndexEntries.sorted(by: { $0.key < $1.key }) {
            indexOffsets.u16(channel)
            indexOffsets.u64(file.position)
            let record = MCAPRecordBytes.record(.messageIndex) {
                $0.u16(channel)
                $0.u32(UInt32(entries.count * 16))
                for (time, offset) in entries {
                    $0.u64(time)
                    $0.u64(offset)
                }
            }
            try writeData(record.bytes)
        }
        let indexesLength = file.position - indexesStart
        chunkIndexes.append(
            MCAPRecordBytes.record(.chunkIndex) {
                $0.u64(chunkStart)
                $0.u64(chunkEnd)
                $0.u64(chunkOffset)
                $0.u64(chunkLength)
                $0.u32(UInt32(indexOffsets.count))
                $0.bytes.append(contentsOf: indexOffsets.bytes)
                $0.u64(indexesLength)
                $0.string(options.compression.name)
                $0.u64(UInt64(compressed.count))
                $0.u64(UInt64(uncompressed.count))
            })
        chunk.bytes.removeAll(keepingCapacity: true)
        chunkIndexEntries.removeAll(keepingCapacity: true)
        chunkStart = .max
        chunkEnd = 0
    }

    private func writeData(_ bytes: [UInt8]) throws(ExportError) {
        dataCRC = crc(dataCRC, bytes)
        try file.write(bytes)
    }

    private func crc(_ running: UInt, _ bytes: [UInt8]) -> UInt {
        bytes.withUnsafeBufferPointer { crc32_z(running, $0.baseAddress, $0.count) }
    }
}
