import FieldcapCore
import Foundation
import TestSupport
import Testing

/// `JSONValue` reads and writes what fieldcap read and wrote with `JSONSerialization`: Foundation
/// is the oracle for the text, and the kinds a number takes are pinned here.
@Suite("JSON values: parse, accessors, compact text")
struct JSONValueTests {
    static func parse(_ text: String) -> JSONValue? { JSONValue.parse(Array(text.utf8)) }

    @Test(
        "a number is an integer when it fits Int64, unsigned when it fits UInt64 only, else a double",
        arguments: [
            ("0", JSONValue.integer(0)), ("-12", .integer(-12)), ("-0", .integer(0)),
            ("9223372036854775807", .integer(Int64.max)), ("-9223372036854775808", .integer(Int64.min)),
            ("9223372036854775808", .unsigned(9_223_372_036_854_775_808)),
            ("18446744073709551615", .unsigned(UInt64.max)),
            ("18446744073709551616", .double(18_446_744_073_709_551_616)),
            ("-9223372036854775809", .double(-9_223_372_036_854_775_808)), ("29.97", .double(29.97)),
            ("1.0", .double(1)), ("1e+16", .double(1e16)), ("2E-3", .double(0.002)), ("1e999", .double(.infinity)),
        ])
    func numberKinds(text: String, expected: JSONValue) throws {
        #expect(Self.parse(text) == expected)
        // The kind, not only the value: `==` on a `.double` and an `.integer` of the same value is false.
        #expect(Self.parse("[\(text)]") == .array([expected]))
    }

    @Test("-0.0 stays a double with its sign; -0 is the integer 0")
    func negativeZero() throws {
        let value = try #require(Self.parse("-0.0")?.doubleValue)
        #expect(value == 0 && value.sign == .minus)
        #expect(Self.parse("-0") == .integer(0) && Self.parse("-0")?.doubleValue?.sign == .plus)
    }

    @Test("strings, literals, arrays and objects, nested; a repeated key keeps the last")
    func structure() throws {
        let value = try #require(
            Self.parse(
                #" { "s" : "a\/b \"q\" \\ \n\t \u00e9 \ud83d\ude00 é", "t": true, "f": false, "n": null, "#
                    + #""a": [1, [], {}, [null, "x"]], "o": {"k": {"k": -1.5}}, "d": 1, "d": 2 } "#))
        #expect(
            value
                == .object([
                    "s": .string("a/b \"q\" \\ \n\t é 😀 é"), "t": .bool(true), "f": .bool(false), "n": .null,
                    "a": .array([.integer(1), .array([]), .object([:]), .array([.null, .string("x")])]),
                    "o": .object(["k": .object(["k": .double(-1.5)])]), "d": .integer(2),
                ]))
        #expect(value["o"]?["k"]?["k"] == .double(-1.5))
        #expect(value["missing"] == nil && value["s"]?["s"] == nil, "a member of a string is nil")
    }

    @Test(
        "only one strict RFC 8259 value is JSON",
        arguments: [
            "", " ", "{", "[1,]", #"{"a":1,}"#, "01", "+1", ".5", "1.", "NaN", "Infinity", "'a'", "1 2", "[1] x",
            #"{a:1}"#, "tru", "\"a", "\"\u{01}\"", #""\x""#, "nul",
        ])
    func notJSON(text: String) {
        #expect(Self.parse(text) == nil, "\(text)")
    }

    @Test("parsing says where and why a text is not JSON")
    func parseError() {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: Array(#"{"a":}"#.utf8)) }
        do {
            _ = try JSONValue(parsing: Array(#"{"a":}"#.utf8))
        } catch {
            #expect(error.column == 6 && !error.message.isEmpty, "\(error)")
        }
    }

    @Test("the number accessors take each numeric case, as the text spelled it; never a boolean")
    func numberAccessors() {
        let integer = JSONValue.integer(-12), unsigned = JSONValue.unsigned(UInt64.max)
        let whole = JSONValue.double(30), fraction = JSONValue.double(29.97)
        #expect(integer.doubleValue == -12 && unsigned.doubleValue == 18_446_744_073_709_551_615.0)
        #expect(whole.doubleValue == 30 && fraction.doubleValue == 29.97)
        #expect(integer.intValue == -12 && unsigned.intValue == nil && whole.intValue == 30 && fraction.intValue == nil)
        #expect(JSONValue.unsigned(5).intValue == 5 && JSONValue.double(1e300).intValue == nil)
        #expect(integer.int64Value == -12 && unsigned.int64Value == nil && whole.int64Value == 30)
        #expect(JSONValue.unsigned(9_223_372_036_854_775_807).int64Value == Int64.max)
        #expect(integer.uint64Value == nil && unsigned.uint64Value == UInt64.max && whole.uint64Value == 30)
        #expect(JSONValue.integer(7).uint64Value == 7 && fraction.uint64Value == nil)
        #expect(JSONValue.double(-1).uint64Value == nil && JSONValue.double(.nan).intValue == nil)
        for notNumber in [JSONValue.bool(true), .bool(false), .string("1"), .null, .array([1]), .object(["a": 1])] {
            #expect(notNumber.doubleValue == nil && notNumber.intValue == nil, "\(notNumber)")
            #expect(notNumber.int64Value == nil && notNumber.uint64Value == nil, "\(notNumber)")
            #expect(notNumber.integerValue == nil && notNumber.unsignedValue == nil, "\(notNumber)")
        }
    }

    @Test("integerValue and unsignedValue take integers spelled as integers only (5.0 is not one)")
    func spelledIntegers() {
        #expect(Self.parse("5")?.integerValue == 5 && Self.parse("5")?.unsignedValue == 5)
        #expect(Self.parse("-5")?.integerValue == -5 && Self.parse("-5")?.unsignedValue == nil)
        #expect(Self.parse("-0")?.unsignedValue == 0, "as UInt64(\"-0\") reads it")
        #expect(Self.parse("18446744073709551615")?.integerValue == nil)
        #expect(Self.parse("18446744073709551615")?.unsignedValue == UInt64.max)
        for text in ["5.0", "5e0", "1e3"] {
            #expect(Self.parse(text)?.integerValue == nil && Self.parse(text)?.unsignedValue == nil, "\(text)")
            #expect(Self.parse(text)?.int64Value != nil, "the lenient reader takes a whole \(text)")
        }
    }

    @Test("the other accessors: each takes its own case only")
    func otherAccessors() {
        let object: JSONValue = ["a": [1, 2], "s": "x", "b": true, "n": nil]
        #expect(object.objectValue?.count == 4 && object.arrayValue == nil && object.stringValue == nil)
        #expect(object["a"]?.arrayValue == [1, 2] && object["a"]?.objectValue == nil)
        #expect(object["s"]?.stringValue == "x" && object["s"]?.boolValue == nil)
        #expect(object["b"]?.boolValue == true && object["b"]?.stringValue == nil && object["b"]?.intValue == nil)
        #expect(object["n"]?.isNull == true && object["s"]?.isNull == false && object["n"]?.stringValue == nil)
        #expect(JSONValue.integer(1).boolValue == nil, "a number is not a boolean")
    }

    @Test("arrayValue(of:) converts every element or gives nil, as `as? [String]` did")
    func arrayOf() {
        #expect(JSONValue.array(["a", "b"]).arrayValue(of: \.stringValue) == ["a", "b"])
        #expect(JSONValue.array([]).arrayValue(of: \.stringValue) == [])
        #expect(JSONValue.array(["a", 1]).arrayValue(of: \.stringValue) == nil)
        #expect(JSONValue.string("a").arrayValue(of: \.stringValue) == nil)
        #expect(JSONValue.array([["k": 1], ["k": 2]]).arrayValue(of: \.objectValue)?.count == 2)
    }

    /// Every kind of value and number, strings that need escapes, keys in Foundation's order
    /// (numeric, case- and width-insensitive; non-ASCII ones through ICU), nesting.
    static let sample: JSONValue = [
        "b/c": "x/y \"q\" \\ \u{01}\u{1F}\n\r\t\u{7F} é 😀 \u{2028}",
        "a": [1, -2, 3.25, 1e-7, 1.5e300, true, false, nil],
        "ch10": ["z": 0, "Z": 1, "é": 2, "e": 3, "ä": 4, "b": 5, "E": 6], "ch2": .unsigned(UInt64.max),
        "A_b": [:], "empty": [], "min": .integer(Int64.min), "max": .integer(Int64.max), "neg_zero": -0.0,
        "whole": 12.0, "third": .double(1.0 / 3), "big": 1e21, "small": 1e-5,
        "nested": ["list": [["deep": ["deeper": [nil, "/"]]]], "Ünïcödé": "ключ"],
        "Ä": 1, "z": 2, "Zeta": 3, "10": 4, "9": 5, "": 6,
    ]

    @Test("compact text is what JSONSerialization writes with .sortedKeys, with and without escaped slashes")
    func compactTextMatchesFoundation() throws {
        for (escaping, options) in [
            (true, JSONSerialization.WritingOptions.sortedKeys), (false, [.sortedKeys, .withoutEscapingSlashes]),
        ] {
            let foundation = String(
                decoding: try JSONSerialization.data(withJSONObject: Self.sample.foundationObject, options: options),
                as: UTF8.self)
            #expect(Self.sample.compactText(escapingSlashes: escaping) == foundation)
        }
    }

    @Test("compact text, spelled out: key order, numbers of each kind, escapes, scalars")
    func compactTextSpelling() {
        let value: JSONValue = [
            "ch10": 1, "ch2": 2, "B": .unsigned(18_446_744_073_709_551_615), "a": [-0.0, 30.0, 0.1, nil, false],
            "s": "a/b\u{01}",
        ]
        #expect(
            value.compactText()
                == #"{"a":[-0,30,0.1,null,false],"B":18446744073709551615,"ch2":2,"ch10":1,"s":"a\/b\u0001"}"#)
        #expect(value.compactText(escapingSlashes: false)?.contains(#""s":"a/b\u0001""#) == true)
        #expect(JSONValue.string("\\/").compactText(escapingSlashes: false) == #""\\/""#, "a backslash stays escaped")
        #expect(JSONValue.integer(-3).compactText() == "-3" && JSONValue.null.compactText() == "null")
        #expect(JSONValue.object([:]).compactText() == "{}" && JSONValue.array([]).compactText() == "[]")
    }

    @Test("a number that is not finite has no text, wherever it is", arguments: [Double.nan, .infinity, -.infinity])
    func nonFinite(number: Double) {
        #expect(JSONValue.double(number).compactText() == nil)
        #expect(JSONValue.object(["a": [1, ["b": .double(number)]]]).compactText() == nil)
    }

    @Test("text read back is the value written, each number of its kind (a whole double comes back an integer)")
    func roundTrip() throws {
        let text = try #require(Self.sample.compactText())
        let back = try #require(Self.parse(text))
        #expect(back["neg_zero"] == .integer(0) && back["whole"] == .integer(12))
        guard case .object(var expected) = Self.sample else {
            Issue.record("the sample is not an object")
            return
        }
        // Written `-0` and `12`: JSON does not tell them from integers.
        expected["neg_zero"] = .integer(0)
        expected["whole"] = .integer(12)
        #expect(back == .object(expected))
        #expect(back.compactText() == text.replacingOccurrences(of: #""neg_zero":-0"#, with: #""neg_zero":0"#))
    }
}
