import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapSession

@Suite("fieldcap.json encoding")
struct SidecarJSONTests {
    /// A document with every kind of value the sidecar holds.
    static var document: [String: JSONValue] {
        [
            "fieldcap_version": "0.1.0", "state": "complete", "host_id": "rig-01",
            "stop_reason": "disk nearly full (1.2 GB free, below --min-free 2 GB)",
            "escapes": "tab\there, quote \" slash / backslash \\ control \u{1} é 😀",
            "sync_point": [
                "monotonic_ns": .unsigned(18_446_744_073_709_551_000), "wall_clock_ns": 1_763_800_000_123_456_789,
            ],
            "streams": [
                [
                    "id": "cam_a", "written": 17998, "nominal_rate": 30.0, "granted_rate": 29.97,
                    "drops": ["count": 0, "records": []],
                    "v4l2": [
                        "frames_with_error_flag": 0, "controls": [:], "drift_ppm": -0.012,
                        "clock_mapping": ["offset_ns": .integer(-1_234_567), "last_bracket_ns": 812],
                    ],
                    "flags": [true, false], "tiny": 1e-7, "big": 1.5e300, "whole": 12.0, "negative_zero": -0.0,
                    "gone": nil,
                ],
                [
                    "id": "imu", "written": 572_207, "drops": ["count": 2, "records": [[10, 11], [400, 401]]],
                    "scale": .double(Double(Float(0.5))),
                ],
            ],
        ]
    }

    @Test("writes what JSONSerialization writes (pretty, sorted keys), byte for byte")
    func matchesFoundation() throws {
        let foundation =
            Array(
                try JSONSerialization.data(
                    withJSONObject: JSONValue.object(Self.document).foundationObject,
                    options: [.prettyPrinted, .sortedKeys]))
            + [10]
        let ours = try Sidecar.bytes(Self.document)
        #expect(String(decoding: ours, as: UTF8.self) == String(decoding: foundation, as: UTF8.self))
    }

    @Test(
        """
        a document read back as recover reads it (JSONValue.parse: numbers as spelled, \
        booleans) is written as JSONSerialization writes what it reads back
        """
    )
    func readBack() throws {
        let written = try Sidecar.bytes(Self.document)
        let foundationReadBack = try #require(try JSONSerialization.jsonObject(with: Data(written)) as? [String: Any])
        let foundation =
            Array(
                try JSONSerialization.data(withJSONObject: foundationReadBack, options: [.prettyPrinted, .sortedKeys]))
            + [10]
        let ours = try Sidecar.bytes(try #require(JSONValue.parse(written)?.objectValue))
        #expect(String(decoding: ours, as: UTF8.self) == String(decoding: foundation, as: UTF8.self))
        // What changed on the way is what JSON itself keeps (-0.0 is read back as the integer 0).
        #expect(ours.count == written.count - 1)
    }

    @Test("values JSON has no spelling for are refused, not written", arguments: [Double.nan, Double.infinity])
    func nonFinite(value: Double) {
        #expect(throws: Sidecar.UnsupportedValue.self) { try Sidecar.bytes(["x": .double(value)]) }
        #expect(throws: Sidecar.UnsupportedValue.self) { try Sidecar.bytes(["x": ["y": [.double(value)]]]) }
    }
}
