import TestSupport
import Testing

@testable import FieldcapOutput

@Suite("Number spelling")
struct NumberFormattingTests {
    static func spelled(_ body: (OutputBytes) -> Void) -> String {
        let out = OutputBytes()
        body(out)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    static func foundationStyle(_ value: Double) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    @Test(
        "the format doc's examples spell as written",
        arguments: [
            (12.0, "12"), (-0.0, "-0"), (100.0, "100"), (1e15, "1000000000000000"), (1e16, "1e+16"),
            (0.0001, "0.0001"), (1e-05, "1e-05"), (0.1 + 0.2, "0.30000000000000004"),
            (Double.greatestFiniteMagnitude, "1.7976931348623157e+308"), (-9.8, "-9.8"), (0.12, "0.12"),
        ])
    func docExamples(value: Double, expected: String) {
        #expect(Self.spelled { $0.appendJSONNumber(value) } == expected)
    }

    @Test("a Float spells as Float.description, not as the widened Double")
    func floatSpelling() {
        #expect(Self.spelled { $0.appendJSONNumber(Float(0.1)) } == "0.1")
        #expect(Self.spelled { $0.appendJSONNumber(Double(Float(0.1))) } == "0.10000000149011612")
        #expect(Self.spelled { $0.appendJSONNumber(Float(3)) } == "3")
    }

    @Test("random bit patterns spell exactly as description minus .0")
    func randomDoubles() {
        var random = SplitMix64(seed: 42)
        var mismatches: [String] = []
        for _ in 0..<300_000 {
            let value = Double(bitPattern: random.next())
            guard value.isFinite else { continue }
            let ours = Self.spelled { $0.appendJSONNumber(value) }
            if ours != Self.foundationStyle(value) { mismatches.append("\(value.bitPattern)") }
        }
        for special in [
            Double.leastNonzeroMagnitude, -Double.leastNormalMagnitude, 2.2250738585072009e-308, 5e-324,
            9007199254740992, 9007199254740993, 1e22, 1e23, 123456789012345680000.0,
        ] {
            if Self.spelled({ $0.appendJSONNumber(special) }) != Self.foundationStyle(special) {
                mismatches.append("\(special)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test("random Float bit patterns spell exactly as Float.description minus .0")
    func randomFloats() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<100_000 {
            let value = Float(bitPattern: UInt32(truncatingIfNeeded: random.next()))
            guard value.isFinite else { continue }
            var expected = value.description
            if expected.hasSuffix(".0") { expected.removeLast(2) }
            #expect(Self.spelled { $0.appendJSONNumber(value) } == expected)
        }
    }

    @Test("integers spell in decimal at the edges of their range")
    func integers() {
        #expect(Self.spelled { $0.appendJSONNumber(UInt64.max) } == "18446744073709551615")
        #expect(Self.spelled { $0.appendJSONNumber(UInt64(0)) } == "0")
        #expect(Self.spelled { $0.appendJSONNumber(Int64.min) } == "-9223372036854775808")
        #expect(Self.spelled { $0.appendJSONNumber(Int64.max) } == "9223372036854775807")
        #expect(Self.spelled { $0.appendJSONNumber(-5) } == "-5")
        var random = SplitMix64(seed: 9)
        for _ in 0..<10_000 {
            let value = Int64(bitPattern: random.next()) >> Int64(random.next() % 63)
            #expect(Self.spelled { $0.appendJSONNumber(value) } == value.description)
        }
    }
}
