/// The channels of a fixed-shape sensor stream, with their JSON order worked out once.
///
/// Thread-safe (immutable).
final class FixedChannelLayout: Sendable {
    /// Channel names in the order the caller passes values.
    let names: [String]
    /// For each position in the written line, the index of the value to write there.
    let writeOrder: [Int]
    /// `"name":` for each position in the written line.
    let encodedKeys: [[UInt8]]

    init(names: [String]) {
        self.names = names
        let sorted = JSONKeyOrder.sorted(names)
        let indexByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        writeOrder = sorted.map { indexByName[$0]! }
        encodedKeys = sorted.map { ByteBuffer.jsonStringLiteral($0) + [UInt8(ascii: ":")] }
    }

    /// Appends `{"a":1,"b":2}` for `values`, given in `names` order.
    @inline(__always)
    func appendObject(values: borrowing InlineArray<16, Double>, to out: ByteBuffer) {
        out.append(UInt8(ascii: "{"))
        for position in 0..<writeOrder.count {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.append(encodedKeys[position])
            out.appendJSONNumber(values[writeOrder[position]])
        }
        out.append(UInt8(ascii: "}"))
    }
}
