/// An MCAP record's bytes as the specification lays them out: little-endian integers, strings
/// and byte arrays behind a `u32` length, maps and arrays behind a `u32` byte length, and each
/// record as `u8 opcode, u64 content length, content` (mcap.dev/spec).
struct MCAPRecordBytes {
    var bytes: [UInt8] = []

    var count: Int { bytes.count }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }

    mutating func string(_ value: String) {
        let utf8 = Array(value.utf8)
        u32(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// A `Bytes` field: its `u32` length, then the bytes.
    mutating func byteArray(_ value: [UInt8]) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `Map<String, String>`, keys sorted so the same map is the same bytes.
    mutating func stringMap(_ map: [String: String]) {
        var body = MCAPRecordBytes()
        for key in map.keys.sorted() {
            body.string(key)
            body.string(map[key]!)
        }
        u32(UInt32(body.count))
        bytes.append(contentsOf: body.bytes)
    }

    /// A record: opcode, content length, content.
    mutating func record(_ opcode: MCAPOpcode, _ content: MCAPRecordBytes) {
        u8(opcode.rawValue)
        u64(UInt64(content.count))
        bytes.append(contentsOf: content.bytes)
    }

    /// A record with `build` writing its content.
    static func record(_ opcode: MCAPOpcode, _ build: (inout MCAPRecordBytes) -> Void) -> MCAPRecordBytes {
        var content = MCAPRecordBytes()
        build(&content)
        var record = MCAPRecordBytes()
        record.record(opcode, content)
        return record
    }
}

/// The record kinds fieldcap writes (mcap.dev/spec, "Records").
enum MCAPOpcode: UInt8 {
    case header = 0x01
    case footer = 0x02
    case schema = 0x03
    case channel = 0x04
    case message = 0x05
    case chunk = 0x06
    case messageIndex = 0x07
    case chunkIndex = 0x08
    case statistics = 0x0B
    case metadata = 0x0C
    case metadataIndex = 0x0D
    case summaryOffset = 0x0E
    case dataEnd = 0x0F
}
