import FieldcapOutput

/// A JSON value for the session's small pretty files (`sync_point.json`, `manifest.json`).
indirect enum PrettyJSONValue: Equatable, Sendable {
    case string(String)
    case integer(Int64)
    case unsigned(UInt64)
    case object([String: PrettyJSONValue])
}

extension PrettyJSONValue {
    /// The bytes the SDK writes for this value: `JSONSerialization` with
    /// `[.prettyPrinted, .sortedKeys]`, every `" : "` then replaced by `": "` (the SDK's own
    /// fix-up, applied to the whole text, strings included), and one trailing newline.
    func sdkPrettyBytes() -> [UInt8] {
        let out = OutputBytes(capacity: 1024)
        write(to: out, indent: 0)
        var bytes = Self.replacingSpacedColons(out.array)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private func write(to out: OutputBytes, indent: Int) {
        switch self {
        case .string(let text): out.appendJSONString(text)
        case .integer(let number): out.appendJSONNumber(number)
        case .unsigned(let number): out.appendJSONNumber(number)
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            out.append(UInt8(ascii: "\n"))
            for (position, key) in JSONKeyOrder.sorted(members.keys).enumerated() {
                if position > 0 { out.append(",\n") }
                Self.writeIndent(indent + 2, to: out)
                out.appendJSONString(key)
                out.append(" : ")
                members[key]!.write(to: out, indent: indent + 2)
            }
            out.append(UInt8(ascii: "\n"))
            Self.writeIndent(indent, to: out)
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeIndent(_ width: Int, to out: OutputBytes) {
        for _ in 0..<width { out.append(UInt8(ascii: " ")) }
    }

    private static func replacingSpacedColons(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if index + 2 < bytes.count, bytes[index] == 0x20, bytes[index + 1] == UInt8(ascii: ":"),
                bytes[index + 2] == 0x20
            {
                result.append(UInt8(ascii: ":"))
                result.append(0x20)
                index += 3
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return result
    }
}
