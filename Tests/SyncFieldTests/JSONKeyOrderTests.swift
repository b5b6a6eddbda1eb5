import TestSupport
import Testing

@testable import SyncField

/// fieldcap orders ASCII keys itself and leaves the rest to Foundation; Foundation is the oracle.
@Suite("JSON key order")
struct JSONKeyOrderTests {
    static let pieces = [
        "a", "A", "b", "B", "z", "Z", "_", "0", "1", "2", "9", "10", "01", "00", "x_y", "ch", "Ch", "accel_x",
    ]

    @Test("ASCII keys are ordered as Foundation orders them, and most pairs without Foundation")
    func asciiAgreesWithFoundation() {
        var random = SplitMix64(seed: 11)
        func key() -> String {
            (0..<Int.random(in: 1...4, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
        }
        var decided = 0
        let pairs = 20_000
        for _ in 0..<pairs {
            let a = key(), b = key()
            let foundation = JSONKeyOrder.foundationPrecedes(a, b)
            if let ours = JSONKeyOrder.asciiPrecedes(a, b) {
                decided += 1
                if ours != foundation {
                    Issue.record("\(a) before \(b): ours \(ours), Foundation \(foundation)")
                    return
                }
            }
            #expect(JSONKeyOrder.precedes(a, b) == foundation)
        }
        // Only pairs that differ in case or leading zeros alone go to Foundation.
        #expect(decided > pairs * 8 / 10, "decided \(decided) of \(pairs)")
    }

    @Test("the rules, spelled out")
    func rules() {
        #expect(JSONKeyOrder.asciiPrecedes("ch2", "ch10") == true)
        #expect(JSONKeyOrder.asciiPrecedes("ch10", "ch2") == false)
        #expect(JSONKeyOrder.asciiPrecedes("a_b", "ab") == true)
        #expect(JSONKeyOrder.asciiPrecedes("a9", "a_") == false)
        #expect(JSONKeyOrder.asciiPrecedes("accel", "accel_x") == true)
        #expect(JSONKeyOrder.asciiPrecedes("Gyro_x", "accel_z") == false)
        #expect(JSONKeyOrder.asciiPrecedes("A", "a") == nil)
        #expect(JSONKeyOrder.asciiPrecedes("ch01", "ch1") == nil)
        #expect(JSONKeyOrder.asciiPrecedes("é", "e") == nil)
        #expect(JSONKeyOrder.asciiPrecedes("a-b", "a_b") == nil)
        for (a, b) in [("A", "a"), ("a", "A"), ("ch01", "ch1"), ("é", "e"), ("a-b", "a_b"), ("a b", "ab")] {
            #expect(JSONKeyOrder.precedes(a, b) == JSONKeyOrder.foundationPrecedes(a, b))
        }
    }
}
