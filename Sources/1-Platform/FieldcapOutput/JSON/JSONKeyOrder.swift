/// The order Foundation's `JSONSerialization` gives dictionary keys with `.sortedKeys`.
///
/// `JSONSerialization` sorts with `String.compare(_:options:range:locale:)` using
/// `[.numeric, .caseInsensitive, .forcedOrdering]` and the system locale, which is ICU's root
/// collation: digit runs compare by value (`ch2` < `ch10`), letters case-insensitively, space
/// and punctuation before digits and digits before letters. When that finds two keys equal,
/// `.forcedOrdering` decides by their first difference: lowercase before uppercase, and a
/// digit run with fewer leading zeros first (`ch1` < `ch01`).
///
/// Keys of printable ASCII (every key fieldcap writes itself, and every key of the SDK's
/// examples) are ordered here, with the root collation's order of those 95 characters. Other
/// keys go to `FoundationCollation`, CoreFoundation's comparison over the system's ICU. The
/// tests hold both to Foundation's answer on random keys. The encoders cache the resulting order.
///
/// Where the system's ICU differs from the one Foundation carries (Debian 12's ICU 72 has CLDR
/// 42: it orders `’` after `'`, which CLDR 44 made equal, and knows no Unicode 16 characters),
/// keys holding those characters follow the system's. Without ICU (no `libicu` at all), keys
/// outside printable ASCII are ordered by their UTF-8 bytes, as swift-foundation's
/// `JSONEncoder` orders every key.
///
/// Thread-safe.
public enum JSONKeyOrder {
    /// `true` when Foundation puts `a` before `b`.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        asciiPrecedes(a, b) ?? collationPrecedes(a, b)
    }

    /// `keys` in Foundation's order.
    public static func sorted<S: Sequence>(_ keys: S) -> [String] where S.Element == String {
        keys.sorted(by: precedes)
    }

    /// Foundation's comparison, step for step, over the system's ICU.
    static func collationPrecedes(_ a: String, _ b: String) -> Bool {
        guard let icu = SystemICU.shared else { return a.utf8.lexicographicallyPrecedes(b.utf8) }
        return FoundationCollation(icu: icu).compare(a, b) < 0
    }

    /// Foundation's answer for keys of printable ASCII; nil when either key holds anything else.
    static func asciiPrecedes(_ a: String, _ b: String) -> Bool? {
        var a = a, b = b
        return a.withUTF8 { a in b.withUTF8 { b in asciiPrecedes(a, b) } }
    }

    private static func asciiPrecedes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard a.allSatisfy({ weight($0) != nil }), b.allSatisfy({ weight($0) != nil }) else { return nil }
        // The first difference that only `.forcedOrdering` looks at: < 0 when `a` goes first.
        var tieBreak = 0
        var i = 0, j = 0
        while i < a.count, j < b.count {
            let x = weight(a[i])!, y = weight(b[j])!
            if x == digitWeight, y == digitWeight {
                let (runA, zerosA) = significantDigits(a, from: &i)
                let (runB, zerosB) = significantDigits(b, from: &j)
                // Runs this long are weighed in pieces by ICU; leave them to the collation.
                guard runA.count <= 18, runB.count <= 18 else { return nil }
                if runA.count != runB.count { return runA.count < runB.count }
                for (p, q) in zip(runA, runB) where p != q { return p < q }
                if tieBreak == 0, zerosA != zerosB { tieBreak = zerosA < zerosB ? -1 : 1 }
                continue
            }
            if x != y { return x < y }
            if tieBreak == 0, a[i] != b[j] {
                // Same letter in another case: lowercase first.
                tieBreak = a[i] > b[j] ? -1 : 1
            }
            i += 1
            j += 1
        }
        if i < a.count || j < b.count { return i == a.count }
        return tieBreak < 0
    }

    /// Digits weigh as one number, between the symbols and the letters; each run is compared by
    /// value before anything after it.
    private static let digitWeight = weights[Int(UInt8(ascii: "0"))]

    /// ICU's root collation orders printable ASCII as `collationOrder` (letters of either case
    /// weigh the same); a byte's weight is its place there, all digits share `digitWeight`.
    private static let weights: [UInt8] = {
        var weights = [UInt8](repeating: 0, count: 128)
        for (place, byte) in collationOrder.utf8.enumerated() {
            weights[Int(byte)] = UInt8(place + 1)
        }
        for byte in UInt8(ascii: "1")...UInt8(ascii: "9") { weights[Int(byte)] = weights[Int(UInt8(ascii: "0"))] }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { weights[Int(byte)] = weights[Int(byte + 32)] }
        return weights
    }()

    /// Printable ASCII in the root collation's order: space and punctuation, symbols, then
    /// (after the digits, which weigh by value) the letters.
    private static let collationOrder = #" _-,;:!?.'"()[]{}@*/\&#%`^+<=>|~$0abcdefghijklmnopqrstuvwxyz"#

    private static func weight(_ byte: UInt8) -> UInt8? {
        guard byte >= 0x20, byte < 0x7F else { return nil }
        let weight = weights[Int(byte)]
        return weight == 0 ? nil : weight
    }

    /// The digit run starting at `index` without its leading zeros (at least one digit), how
    /// many zeros led it, and `index` moved past the run.
    private static func significantDigits(
        _ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int
    ) -> (digits: Slice<UnsafeBufferPointer<UInt8>>, leadingZeros: Int) {
        var end = index
        while end < bytes.count, bytes[end] >= UInt8(ascii: "0"), bytes[end] <= UInt8(ascii: "9") { end += 1 }
        var start = index
        while start < end - 1, bytes[start] == UInt8(ascii: "0") { start += 1 }
        defer { index = end }
        return (bytes[start..<end], start - index)
    }
}

/// Remembers Foundation's order for key lists already seen. Sorting keys outside printable
/// ASCII costs microseconds per key pair; a session repeats the same few key lists on every
/// line, so a reader of millions of lines sorts each list once.
///
/// Thread-bound.
public final class KeyOrderCache {
    private var sortedByKeys: [[String]: [String]] = [:]

    public init() {}

    /// `keys` in Foundation's order.
    public func sorted(_ keys: [String]) -> [String] {
        if let known = sortedByKeys[keys] { return known }
        let sorted = JSONKeyOrder.sorted(keys)
        if sortedByKeys.count < 10_000 { sortedByKeys[keys] = sorted }
        return sorted
    }
}
