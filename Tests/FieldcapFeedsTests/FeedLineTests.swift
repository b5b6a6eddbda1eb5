import FieldcapCore
import FieldcapFeeds
import Testing

private func parse(_ text: String) throws(FeedLine.Problem) -> FeedLine {
    let bytes = Array(text.utf8)
    let result = bytes.withUnsafeBytes { raw in Result { () throws(FeedLine.Problem) in try FeedLine(parsing: raw) } }
    return try result.get()
}

private func rejection(_ text: String) -> FeedLine.Rejection? {
    do {
        _ = try parse(text)
        return nil
    } catch {
        return error.rejection
    }
}

@Suite("a feed's lines")
struct FeedLineTests {
    @Test("a record: nested channels keep the kinds their spelling gives, times are whole numbers")
    func record() throws {
        let line = try parse(
            #"{"capture_ns": 1234, "uncertainty_ns": 50, "channels": {"f": [1, 2.5, -0.0, 3e2], "g": {"w": 7}, "u": 18446744073709551615}}"#
        )
        #expect(line.captureNs == 1234)
        #expect(line.uncertaintyNs == 50)
        let forces = try #require(line.channels["f"] as? [Any])
        #expect(forces[0] as? Int == 1)
        #expect(forces[1] as? Double == 2.5)
        #expect((forces[2] as? Double).map { $0 == 0 && $0.sign == .minus } == true)
        #expect(forces[3] as? Double == 300)
        #expect((line.channels["g"] as? [String: Any])?["w"] as? Int == 7)
        #expect(line.channels["u"] as? UInt64 == .max)
        #expect(line.flattenedNames == ["f.0", "f.1", "f.2", "f.3", "g.w", "u"])
    }

    @Test("a record without times: both nil (stamped on arrival, the SDK's uncertainty)")
    func withoutTimes() throws {
        let line = try parse(#"{"channels":{"a":1}}"#)
        #expect(line.captureNs == nil && line.uncertaintyNs == nil)
    }

    @Test("every kind of bad line is refused for its own reason")
    func refusals() {
        let cases: [(String, FeedLine.Rejection)] = [
            ("not json", .notJSON),
            (#"{"channels": {"a": 1}"#, .notJSON),
            ("[1, 2]", .notRecord),
            (#"{"values": {"a": 1}}"#, .notRecord),
            (#"{"channels": [1, 2]}"#, .notRecord),
            (#"{"channels": {"a": 1}, "channels": {"a": 2}}"#, .notRecord),
            (#"{"channels": {"a": 1, "a": 2}}"#, .notRecord),
            (#"{"channels": {"a": 1}, "captureNs": 5}"#, .notRecord),
            (#"{"capture_ns": 5}"#, .notRecord),
            (#"{"channels": {"a": "1"}}"#, .notNumeric),
            (#"{"channels": {"a": true}}"#, .notNumeric),
            (#"{"channels": {"a": [1, null]}}"#, .notNumeric),
            (#"{"channels": {"a": 1e999}}"#, .notNumeric),
            (#"{"channels": {"a": 1}, "capture_ns": -5}"#, .badTime),
            (#"{"channels": {"a": 1}, "capture_ns": 5.5}"#, .badTime),
            (#"{"channels": {"a": 1}, "capture_ns": "5"}"#, .badTime),
            (#"{"channels": {"a": 1}, "uncertainty_ns": 1e3}"#, .badTime),
        ]
        for (text, expected) in cases {
            #expect(rejection(text) == expected, "\(text)")
        }
    }

    @Test("channels nested deeper than the limit are refused, not recursed into")
    func deepNesting() {
        let deep = String(repeating: "[", count: 40) + "1" + String(repeating: "]", count: 40)
        #expect(rejection(#"{"channels": {"a": \#(deep)}}"#) == .notRecord)
        let fine = String(repeating: "[", count: 20) + "1" + String(repeating: "]", count: 20)
        #expect(rejection(#"{"channels": {"a": \#(fine)}}"#) == nil)
    }

    @Test("random bytes and cut records never crash the parser: each is a record or a refusal")
    func hostileBytes() {
        var random = SystemRandomNumberGenerator()
        let good = Array(#"{"capture_ns":12,"channels":{"a":[1,2.5],"b":{"c":-3}}}"#.utf8)
        for round in 0..<3000 {
            var bytes = good
            if round % 3 == 0 {
                bytes = bytes.prefix(Int.random(in: 0...bytes.count, using: &random)).map { $0 }
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
            }
            _ = bytes.withUnsafeBytes { raw in try? FeedLine(parsing: raw) }
        }
    }

    @Test("a pinned schema: names or prefixes, every leaf covered, every name used")
    func schema() {
        let leaves = ["force.0", "force.1", "width"]
        #expect(FeedSchema.problem(leaves, pinned: ["force", "width"]) == nil)
        #expect(FeedSchema.problem(leaves, pinned: ["force.0", "force.1", "width"]) == nil)
        #expect(FeedSchema.problem(leaves, pinned: ["force", "width", "torque"])?.contains("no torque") == true)
        #expect(FeedSchema.problem(leaves, pinned: ["force"])?.contains("width not pinned") == true)
        // A prefix covers only whole names: `forc` is not `force`.
        #expect(FeedSchema.problem(leaves, pinned: ["forc", "width"]) != nil)
    }
}
