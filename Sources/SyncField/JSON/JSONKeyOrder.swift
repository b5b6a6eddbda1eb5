import Foundation

/// The order Foundation's `JSONSerialization` gives dictionary keys with `.sortedKeys`.
///
/// `JSONSerialization` sorts with `String.compare(_:options:range:locale:)` using
/// `[.numeric, .caseInsensitive, .forcedOrdering]` and the system locale: digit runs compare
/// by value (`ch2` < `ch10`), letters case-insensitively, `_` before letters. Reproducing
/// that for arbitrary Unicode means reproducing CoreFoundation's folding tables, so this calls
/// the very same comparison. It is only used when a key set is seen for the first time: the
/// encoders cache the resulting order.
///
/// Thread-safe.
public enum JSONKeyOrder {
    /// `true` when Foundation puts `a` before `b`.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        a.compare(
            b, options: [.numeric, .caseInsensitive, .forcedOrdering],
            range: a.startIndex..<a.endIndex, locale: NSLocale.system
        ) == .orderedAscending
    }

    /// `keys` in Foundation's order.
    public static func sorted<S: Sequence>(_ keys: S) -> [String] where S.Element == String {
        keys.sorted(by: precedes)
    }
}

/// Remembers Foundation's order for key lists already seen. Sorting with Foundation's
/// comparison costs microseconds per key pair; a session repeats the same few key lists on every
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
