import FieldcapOutput

/// What the SDK would have written for a parsed value: Foundation's key order, Foundation's
/// number spellings, Foundation's escaping, no whitespace.
enum CanonicalJSON {
    /// The spellings the SDK can produce for the number spelled `text`: as an integer, as a
    /// `Double`, or as a `Float` (each by `description`, minus a trailing `.0`).
    static func spellings(ofNumber text: String) -> [String] {
        var result: [String] = []
        if let integer = Int64(text) { result.append(String(integer)) }
        if let unsigned = UInt64(text) { result.append(String(unsigned)) }
        if let double = Double(text), double.isFinite {
            let out = OutputBytes(capacity: 32)
            out.appendJSONNumber(double)
            result.append(String(decoding: out.bytes, as: UTF8.self))
            if let single = Float(text), single.isFinite {
                out.removeAll()
                out.appendJSONNumber(single)
                result.append(String(decoding: out.bytes, as: UTF8.self))
            }
        }
        return result
    }

    static func isCanonical(number text: String) -> Bool {
        // Most numbers in a session are integers spelled as Swift spells them (capture_ns,
        // frame_number, uncertainty_ns): those are canonical without parsing them as Double and
        // Float. Anything else takes the full comparison.
        isPlainInteger(text) || spellings(ofNumber: text).contains(text)
    }

    /// Whether `text` is exactly `String(n)` of some Int64 or UInt64 `n`: an optional minus, then
    /// `0` alone or digits without a leading zero, not `-0`, and in range.
    static func isPlainInteger(_ text: String) -> Bool {
        var utf8 = text.utf8[...]
        let negative = utf8.first == UInt8(ascii: "-")
        if negative { utf8 = utf8.dropFirst() }
        guard let first = utf8.first, utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return false
        }
        if first == UInt8(ascii: "0") { return utf8.count == 1 && !negative }
        return negative ? Int64(text) != nil : UInt64(text) != nil
    }

    /// Appends the canonical compact spelling of `value`.
    static func append(_ value: ParsedJSON, to out: OutputBytes, keyOrder: KeyOrderCache) {
        switch value {
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            let keys = members.map(\.key)
            let sorted = keyOrder.sorted(keys)
            // Already in order (the usual case): no need to look members up by key.
            let ordered =
                sorted == keys
                ? members.map(\.value)
                : sorted.map { key in members.first { $0.key == key }!.value }
            for (position, key) in sorted.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.appendJSONString(key)
                out.append(UInt8(ascii: ":"))
                append(ordered[position], to: out, keyOrder: keyOrder)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: out, keyOrder: keyOrder)
            }
            out.append(UInt8(ascii: "]"))
        case .string(let text):
            out.appendJSONString(text)
        case .number(let text):
            if isCanonical(number: text) {
                out.append(Array(text.utf8))
            } else {
                out.append(Array((spellings(ofNumber: text).last ?? text).utf8))
            }
        case .bool(let flag):
            out.append(flag ? "true" : "false")
        case .null:
            out.append("null")
        }
    }

    static func bytes(_ value: ParsedJSON, keyOrder: KeyOrderCache) -> [UInt8] {
        let out = OutputBytes(capacity: 256)
        append(value, to: out, keyOrder: keyOrder)
        return out.array
    }
}
