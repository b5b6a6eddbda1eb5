import Foundation
import TestSupport
import Testing

@testable import FieldcapOutput

/// fieldcap orders ASCII keys itself and the rest with CoreFoundation's algorithm over the
/// system's ICU; Foundation's own comparison (with the ICU it carries) is the oracle.
@Suite("JSON key order")
struct JSONKeyOrderTests {
    /// What `JSONSerialization` sorts keys with.
    static func foundationOrder(_ a: String, _ b: String) -> ComparisonResult {
        a.compare(
            b, options: [.numeric, .caseInsensitive, .forcedOrdering], range: a.startIndex..<a.endIndex,
            locale: NSLocale.system as Locale)
    }

    static func foundationPrecedes(_ a: String, _ b: String) -> Bool { foundationOrder(a, b) == .orderedAscending }

    static let pieces = [
        "a", "A", "b", "B", "z", "Z", "_", "0", "1", "2", "9", "10", "01", "00", "x_y", "ch", "Ch", "accel_x",
        "-", ".", " ", "$", "~", "/", "\\", "\"", "'", "{", "+", "=", "|", "é",
    ]

    @Test("printable ASCII keys are ordered as Foundation orders them, every pair without Foundation")
    func asciiAgreesWithFoundation() {
        var random = SplitMix64(seed: 11)
        func key() -> String {
            (0..<Int.random(in: 1...4, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
        }
        var asciiPairs = 0, decided = 0
        let pairs = 20_000
        for _ in 0..<pairs {
            let a = key(), b = key()
            let foundation = Self.foundationPrecedes(a, b)
            if (a + b).utf8.allSatisfy({ $0 < 0x80 }) { asciiPairs += 1 }
            if let ours = JSONKeyOrder.asciiPrecedes(a, b) {
                decided += 1
                if ours != foundation {
                    Issue.record(
                        "\(a.debugDescription) before \(b.debugDescription): ours \(ours), Foundation \(foundation)")
                    return
                }
            }
            #expect(JSONKeyOrder.precedes(a, b) == foundation)
        }
        // Only keys with other characters (é here) go to the collation.
        #expect(decided == asciiPairs && asciiPairs > pairs * 7 / 10, "decided \(decided) of \(asciiPairs) ASCII pairs")
    }

    @Test("the rules, spelled out")
    func rules() {
        #expect(JSONKeyOrder.asciiPrecedes("ch2", "ch10") == true)
        #expect(JSONKeyOrder.asciiPrecedes("ch10", "ch2") == false)
        #expect(JSONKeyOrder.asciiPrecedes("a_b", "ab") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a b", "a_b") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a_b", "a-b") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a$", "a0") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a9", "a_") == false)
        #expect(JSONKeyOrder.asciiPrecedes("accel", "accel_x") == true)
        #expect(JSONKeyOrder.asciiPrecedes("Gyro_x", "accel_z") == false)
        // Equal but for case or leading zeros: the first such difference decides.
        #expect(JSONKeyOrder.asciiPrecedes("a", "A") == true)
        #expect(JSONKeyOrder.asciiPrecedes("A", "a") == false)
        #expect(JSONKeyOrder.asciiPrecedes("aB", "Ab") == true)
        #expect(JSONKeyOrder.asciiPrecedes("ch1", "ch01") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a01b", "a1B") == false)
        #expect(JSONKeyOrder.asciiPrecedes("ab", "ab") == false)
        #expect(JSONKeyOrder.asciiPrecedes("é", "e") == nil)
        #expect(JSONKeyOrder.asciiPrecedes("a\tb", "ab") == nil)
        for (a, b) in [
            ("A", "a"), ("a", "A"), ("ch01", "ch1"), ("é", "e"), ("a-b", "a_b"), ("a b", "ab"), ("aB", "Ab"),
        ] {
            #expect(JSONKeyOrder.precedes(a, b) == Self.foundationPrecedes(a, b))
        }
    }

    /// Keys from one script or kind of character at a time, so that comparisons go deep: case
    /// pairs that fold to several letters (`ß`, `ﬃ`, `İ`), precomposed against decomposed
    /// letters, digit runs beside them, combining marks, controls and invisible formats,
    /// characters outside the BMP, Cherokee (which folds to capitals), CJK.
    static let alphabets: [[String]] = [
        [
            "a", "A", "b", "é", "É", "e\u{301}", "ß", "ss", "SS", "ẞ", "ﬁ", "fi", "1", "01", "2", "10", "_", "-",
            " ", ".", "ö",
            "o\u{308}", "Ö", "ø", "æ",
        ],
        ["α", "Α", "ά", "σ", "ς", "Σ", "β", "ϐ", "ω", "ᾀ", "1", "_", "a"],
        ["ж", "Ж", "ё", "е\u{308}", "і", "ї", "1", "a", "-"],
        ["中", "文", "日", "本", "한", "글", "ア", "カ", "ｶ", "1", "a", "_", "。", "、"],
        ["\u{1}", "\u{1F}", "\t", "\u{7F}", "\u{200B}", "\u{FEFF}", "\u{301}", "\u{308}", "\u{327}", "a", "A", "1"],
        ["😀", "𝒜", "𐐀", "𐐨", "a", "1", "_", "\u{1F3FB}", "é"],
        ["İ", "ı", "i", "I", "ŉ", "ǰ", "ΐ", "ﬀ", "ﬃ", "Ꭰ", "ꭰ", "ſ", "K", "Å", "a", "1"],
        ["a", "b", "1", "2", "0", "é", "-", ".", "_", "‐", "«", "»", "€", "$", "°", "µ", "ä", "Ä"],
    ]

    @Test("keys outside printable ASCII are ordered as Foundation orders them", arguments: [3, 8, 40])
    func collationAgreesWithFoundation(longestKey: Int) throws {
        try #require(SystemICU.shared != nil, "libicu did not load")
        var random = SplitMix64(seed: UInt64(longestKey))
        var mismatches: [String] = []
        let pairs = longestKey > 10 ? 2_000 : 20_000
        for round in 0..<pairs {
            let alphabet = Self.alphabets[round % Self.alphabets.count]
            func key() -> String {
                (0..<Int.random(in: 1...longestKey, using: &random)).map { _ in alphabet.randomElement(using: &random)!
                }
                .joined()
            }
            let a = key()
            // Half the pairs share a prefix, so that the difference comes late.
            let b =
                Bool.random(using: &random)
                ? String(a.prefix(Int.random(in: 0...a.count, using: &random))) + key() : key()
            if JSONKeyOrder.collationPrecedes(a, b) != Self.foundationPrecedes(a, b) {
                mismatches.append(
                    "\(a.debugDescription) before \(b.debugDescription): Foundation \(Self.foundationPrecedes(a, b))")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(pairs): \(mismatches.prefix(5))")
    }

    @Test("the collation's own cases: folding, clusters, digits, surrogates at the start")
    func collationCases() throws {
        try #require(SystemICU.shared != nil, "libicu did not load")
        let cases: [(String, String)] = [
            ("straße", "strasse"), ("STRASSE", "straße"), ("ﬁle", "file"), ("café", "cafe\u{301}"),
            ("Σίσυφος", "ΣΊΣΥΦΟΣ"),
            ("x2é", "x10e"), ("é01", "é1"), ("ꭰa", "Ꭰb"), ("aꭰ", "ÅİᎠ"), ("😀a", "😀b"),
            ("\u{1F3FB}x", "\u{1F3FB}"), ("𐐀", "𐐨"), ("a\u{301}\u{327}", "a\u{327}\u{301}"), ("\u{200B}a", "a"),
            (
                "é" + String(repeating: "x", count: 70) + "a",
                "é" + String(repeating: "x", count: 70) + "B"
            ),
        ]
        for (a, b) in cases {
            #expect(JSONKeyOrder.collationPrecedes(a, b) == Self.foundationPrecedes(a, b), "\(a) before \(b)")
            #expect(JSONKeyOrder.collationPrecedes(b, a) == Self.foundationPrecedes(b, a), "\(b) before \(a)")
        }
    }
}
