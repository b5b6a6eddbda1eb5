extension OutputBytes {
    /// Appends `text` as a JSON string literal the way Foundation's `JSONSerialization` does:
    /// `"` `\` and `/` escaped, `\b \f \n \r \t` by name, other control characters as `\u00xx`
    /// (lower-case hex), everything else as raw UTF-8.
    public func appendJSONString(_ text: String) {
        append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { appendEscapedUTF8($0) }
        append(UInt8(ascii: "\""))
    }

    func appendEscapedUTF8(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        for index in 0..<utf8.count {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "/")
            else { continue }
            append(UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            runStart = index + 1
            append(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): append(byte)
            case 0x08: append(UInt8(ascii: "b"))
            case 0x0C: append(UInt8(ascii: "f"))
            case 0x0A: append(UInt8(ascii: "n"))
            case 0x0D: append(UInt8(ascii: "r"))
            case 0x09: append(UInt8(ascii: "t"))
            default:
                let hex: StaticString = "0123456789abcdef"
                append("u00")
                append(hex.utf8Start[Int(byte >> 4)])
                append(hex.utf8Start[Int(byte & 0xF)])
            }
        }
        append(UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
    }

    /// The JSON string literal for `text`, as bytes.
    public static func jsonStringLiteral(_ text: String) -> [UInt8] {
        let buffer = OutputBytes(capacity: text.utf8.count + 8)
        buffer.appendJSONString(text)
        return buffer.array
    }
}
