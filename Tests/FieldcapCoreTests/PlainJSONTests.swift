import FieldcapCore
import Foundation
import Testing

/// `PlainJSON` stands where `JSONSerialization` stood: Foundation is the oracle.
@Suite("Plain JSON values")
struct PlainJSONTests {
    @Test("numbers come back as their spelling says; the readers take each type")
    func numbers() throws {
        let object = try #require(
            PlainJSON.object(
                Array(#"{"i":-12,"u":18446744073709551615,"d":29.97,"e":1e+16,"t":true,"n":null,"s":"a\/b"}"#.utf8)))
        #expect(object["i"] as? Int == -12)
        #expect(object["u"] as? UInt64 == UInt64.max)
        #expect(object["d"] as? Double == 29.97)
        #expect(object["e"] as? Double == 1e16)
        #expect(object["t"] as? Bool == true)
        #expect(object["n"] is JSONNull)
        #expect(object["s"] as? String == "a/b")
        #expect(PlainJSON.double(object["i"]) == -12 && PlainJSON.int(object["d"]) == nil)
        #expect(PlainJSON.uint64(object["u"]) == UInt64.max && PlainJSON.int(object["u"]) == nil)
        #expect(PlainJSON.uint64(object["i"]) == nil && PlainJSON.int(30.0) == 30)
        #expect(PlainJSON.double(object["t"]) == nil, "a boolean is not a number")
        #expect(PlainJSON.object(Array("[1]".utf8)) == nil && PlainJSON.parse(Array("{".utf8)) == nil)
    }

    @Test("compact text is what JSONSerialization writes with .sortedKeys, with and without escaped slashes")
    func compactText() throws {
        let value: [String: Any] = [
            "b/c": "x/y \"q\" \u{01}\n é", "a": [1, -2, 3.25, 1e-7, 1.5e300, true, false], "ch10": ["z": 0, "Z": 1],
            "ch2": UInt64.max, "A_b": [String: Any](),
        ]
        for (escaping, options) in [
            (true, JSONSerialization.WritingOptions.sortedKeys), (false, [.sortedKeys, .withoutEscapingSlashes]),
        ] {
            let foundation = String(
                decoding: try JSONSerialization.data(withJSONObject: value, options: options), as: UTF8.self)
            #expect(PlainJSON.text(value, escapingSlashes: escaping) == foundation)
        }
        #expect(PlainJSON.text(["x": Double.nan]) == nil)
        #expect(PlainJSON.text(["x": Date()]) == nil)
    }
}
