import TestSupport
import Testing

@testable import SyncField

/// fieldcap orders ASCII keys itself and leaves the rest to Foundation; Foundation is the oracle.
@Suite("JSON key order")
struct JSONKeyOrderTests {
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
            let foundation = JSONKeyOrder.foundationPrecedes(a, b)
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
        // Only keys with other characters (é here) go to Foundation.
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
            #expect(JSONKeyOrder.precedes(a, b) == JSONKeyOrder.foundationPrecedes(a, b))
        }
    }
}
