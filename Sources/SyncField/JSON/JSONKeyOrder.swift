import Foundation

/// The order Foundation's `JSONSerialization` gives dictionary keys with `.sortedKeys`.
///
/// `JSONSerialization` sorts with `String.compare(_:options:range:locale:)` using
/// `[.numeric, .caseInsensitive, .forcedOrdering]` and the system locale: digit runs compare
/// by value (`ch2` < `ch10`), letters case-insensitively, `_` before digits and digits before
/// letters. Reproducing that for arbitrary Unicode means reproducing ICU's collation tables, so
/// other keys go to the very same comparison. Keys of ASCII letters, digits and `_` (every key
/// fieldcap writes itself) are ordered here: the first such comparison would load ICU's
/// collator, a tenth of a short recording's start-up on a small CPU. The encoders cache the
/// resulting order.
///
/// Thread-safe.
package enum JSONKeyOrder {
    /// `true` when Foundation puts `a` before `b`.
    package static func precedes(_ a: String, _ b: String) -> Bool {
        asciiPrecedes(a, b) ?? foundationPrecedes(a, b)
    }

    /// `keys` in Foundation's order.
    package static func sorted<S: Sequence>(_ keys: S) -> [String] where S.Element == String {
        keys.sorted(by: precedes)
    }

    /// Foundation's own comparison.
    static func foundationPrecedes(_ a: String, _ b: String) -> Bool {
        a.compare(
            b, options: [.numeric, .caseInsensitive, .forcedOrdering],
            range: a.startIndex..<a.endIndex, locale: NSLocale.system
        ) == .orderedAscending
    }

    /// Foundation's answer for keys of ASCII letters, digits and `_` that differ in more than
    /// case and leading zeros; nil for any other pair.
    ///
    /// The collator compares primary weights first: `_` < digits < letters, a letter's case
    /// ignored, a digit run weighed by its value, and a key that is a prefix of the other first.
    /// Only when all of those tie do case and leading zeros decide (`.forcedOrdering`), and
    /// those pairs are left to Foundation.
    static func asciiPrecedes(_ a: String, _ b: String) -> Bool? {
        var a = a, b = b
        return a.withUTF8 { a in b.withUTF8 { b in asciiPrecedes(a, b) } }
    }

    private static func asciiPrecedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool? {
        var i = 0, j = 0
        while i < a.count, j < b.count {
            guard let x = primaryClass(a[i]), let y = primaryClass(b[j]) else { return nil }
            if x == digitClass, y == digitClass {
                let runA = significantDigits(a, from: &i), runB = significantDigits(b, from: &j)
                // Runs this long are weighed in pieces by ICU; leave them to Foundation.
                guard runA.count <= 18, runB.count <= 18 else { return nil }
                if runA.count != runB.count { return runA.count < runB.count }
                for (p, q) in zip(runA, runB) where p != q { return p < q }
                continue
            }
            if x != y { return x < y }
            i += 1
            j += 1
        }
        guard a[i...].allSatisfy({ primaryClass($0) != nil }), b[j...].allSatisfy({ primaryClass($0) != nil }) else {
            return nil
        }
        if i == a.count, j == b.count { return nil }
        return i == a.count
    }

    private static let digitClass = 1

    /// `_` 0, digits 1, letters 2 + their place in the alphabet; nil for any other byte.
    private static func primaryClass(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "_"): 0
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digitClass
        case UInt8(ascii: "a")...UInt8(ascii: "z"): 2 + Int(byte - UInt8(ascii: "a"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): 2 + Int(byte - UInt8(ascii: "A"))
        default: nil
        }
    }

    /// The digit run starting at `index` without its leading zeros (at least one digit), and
    /// `index` moved past the run.
    private static func significantDigits(
        _ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int
    ) -> Slice<UnsafeBufferPointer<UInt8>> {
        var end = index
        while end < bytes.count, primaryClass(bytes[end]) == digitClass { end += 1 }
        var start = index
        while start < end - 1, bytes[start] == UInt8(ascii: "0") { start += 1 }
        index = end
        return bytes[start..<end]
    }
}

/// Remembers Foundation's order for key lists already seen. Sorting with Foundation's
/// comparison costs microseconds per key pair; a session repeats the same few key lists on every
/// line, so a reader of millions of lines sorts each list once.
///
/// Thread-bound.
package final class KeyOrderCache {
    private var sortedByKeys: [[String]: [String]] = [:]

    package init() {}

    /// `keys` in Foundation's order.
    package func sorted(_ keys: [String]) -> [String] {
        if let known = sortedByKeys[keys] { return known }
        let sorted = JSONKeyOrder.sorted(keys)
        if sortedByKeys.count < 10_000 { sortedByKeys[keys] = sorted }
        return sorted
    }
}
