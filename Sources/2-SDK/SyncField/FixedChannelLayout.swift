import FieldcapOutput

/// The channels of a fixed-shape sensor stream, with their JSON order worked out once.
///
/// Thread-safe (immutable).
final class FixedChannelLayout: Sendable {
    /// Channel names in the order the caller passes values.
    let names: [String]
    /// For each position in the written line, the index of the value to write there.
    let writeOrder: [Int]
    /// `"name":` for each position in the written line, one after the other, in memory the
    /// layout owns: an array of arrays cost a retain and a release per key written.
    nonisolated(unsafe) private let encodedKeys: UnsafeMutableBufferPointer<UInt8>
    /// Where each position's `"name":` is in `encodedKeys`.
    let keyRanges: [Range<Int>]

    init(names: [String]) {
        self.names = names
        let sorted = JSONKeyOrder.sorted(names)
        let indexByName = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        writeOrder = sorted.map { indexByName[$0]! }
        var keys: [UInt8] = []
        var ranges: [Range<Int>] = []
        for name in sorted {
            let start = keys.count
            keys += OutputBytes.jsonStringLiteral(name) + [UInt8(ascii: ":")]
            ranges.append(start..<keys.count)
        }
        encodedKeys = .allocate(capacity: keys.count)
        _ = encodedKeys.initialize(from: keys)
        keyRanges = ranges
    }

    deinit { encodedKeys.deallocate() }

    /// Appends `{"a":1,"b":2}` for `values`, given in `names` order.
    @inline(__always)
    func appendObject(values: borrowing InlineArray<16, Double>, to out: OutputBytes) {
        out.append(UInt8(ascii: "{"))
        for position in 0..<writeOrder.count {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UnsafeBufferPointer(rebasing: encodedKeys[keyRanges[position]]))
            out.appendJSONNumber(values[writeOrder[position]])
        }
        out.append(UInt8(ascii: "}"))
    }
}
