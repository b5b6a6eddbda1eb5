/// An Annex B byte stream (H.264, HEVC): NAL units, each after a 3- or 4-byte start code.
enum AnnexB {
    /// The NAL units of `stream` (without their start codes), in order. Bytes before the first
    /// start code are not a NAL unit and are skipped.
    static func units(_ stream: UnsafeRawBufferPointer) -> [Range<Int>] {
        var units: [Range<Int>] = []
        var start: Int?
        var index = 0
        let count = stream.count
        while index + 2 < count {
            if stream[index] == 0, stream[index + 1] == 0, stream[index + 2] == 1 {
                if let begun = start {
                    // A 4-byte start code's leading zero belongs to it, not to the unit before.
                    let end = index > begun && stream[index - 1] == 0 ? index - 1 : index
                    units.append(begun..<end)
                }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begun = start, begun < count { units.append(begun..<count) }
        return units.filter { !$0.isEmpty }
    }

    /// A NAL unit's payload with emulation prevention removed (`00 00 03` -> `00 00`): the
    /// raw bits a parameter set's fields are read from.
    static func rbsp(_ unit: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(unit.count)
        var zeros = 0
        for byte in unit {
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }
}

/// Reads bits, most significant first, and Exp-Golomb codes (H.264 and HEVC parameter sets).
struct BitReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bit() throws(BitstreamError) -> UInt32 {
        guard position < bytes.count * 8 else { throw BitstreamError("a parameter set ends early") }
        defer { position += 1 }
        return UInt32(bytes[position / 8] >> (7 - UInt8(position % 8)) & 1)
    }

    mutating func bits(_ count: Int) throws(BitstreamError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count { value = value << 1 | (try bit()) }
        return value
    }

    /// ue(v).
    mutating func unsignedExpGolomb() throws(BitstreamError) -> UInt32 {
        var zeros = 0
        while try bit() == 0 {
            zeros += 1
            guard zeros < 32 else { throw BitstreamError("an Exp-Golomb code longer than 32 bits") }
        }
        return (1 << zeros) - 1 + (try bits(zeros))
    }
}

/// A coded stream that is not what its codec says.
public struct BitstreamError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
