import FieldcapArchive
import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import Testing

/// `sync_check` in fieldcap.json: written, read back the same, and refused (with where) when it
/// is not what fieldcap writes, by validate and the listings alike.
@Suite("fieldcap.json's sync_check")
struct SyncCheckEntryTests {
    static let entry = SyncCheckEntry(
        checkedUtc: "2026-11-29T10:00:00.000Z", window: 0.5...10.25, windowChoice: "most_excited", windowIMU: "imu0",
        pairs: [
            SyncCheckEntry.Pair(
                camera: "cam0", imu: "imu0",
                imageAlignment: .estimate(
                    SyncCheckEntry.Estimate(
                        offsetNs: 7_512_345, timeshiftCamIMU: -0.007512345, correlation: 0.98, sharpness: 0.4,
                        rivalCorrelation: 0.3, confidence: 0.7, gyroRMSRadS: 1.5, turnScale: 1.01, framePairs: 290,
                        excludedPairs: 2, framePeriodNs: 33_333_333)),
                differenceEnergy: .refused(reason: "no-match", message: "no offset matched"), intrinsics: true,
                frameUncertaintyNs: 1_000_000, skippedFrames: 0, missingGyroAxes: ["z"],
                exceedsFrameUncertainty: true, calibrationTimeshiftCamIMU: nil),
            SyncCheckEntry.Pair(
                camera: "cam1", imu: "imu0", imageAlignment: .refused(reason: "still-rig", message: "turn the rig"),
                differenceEnergy: .refused(reason: "still-rig", message: "turn the rig"), intrinsics: false,
                frameUncertaintyNs: nil, skippedFrames: 3, missingGyroAxes: [], exceedsFrameUncertainty: false,
                calibrationTimeshiftCamIMU: -0.0075),
        ])

    @Test("what is written reads back the same, through the sidecar's own text")
    func roundTrip() throws {
        let text = try #require(Self.entry.json.compactText())
        let parsed = try #require(JSONValue.parse(Data(text.utf8)))
        #expect(try SyncCheckEntry(json: parsed, streams: ["cam0", "cam1", "imu0"]) == Self.entry)
        #expect(!Self.entry.allMeasured)
    }

    @Test(
        "a member that is not what fieldcap writes is refused, saying where",
        arguments: [
            (#"{"pairs": []}"#, "sync_check.checked_utc must be text"),
            (#"{"checked_utc": "yesterday", "window_s": [0, 1], "window": "whole", "pairs": []}"#, "checked_utc"),
            (
                #"{"checked_utc": "2026-11-29T10:00:00Z", "window_s": [2, 1], "window": "whole", "pairs": []}"#,
                "window_s"
            ),
            (#"{"checked_utc": "2026-11-29T10:00:00Z", "window_s": [0, 1], "window": "most", "pairs": []}"#, "window"),
            (#"{"checked_utc": "2026-11-29T10:00:00Z", "window_s": [0, 1], "window": "whole", "pairs": {}}"#, "pairs"),
            (#"[1, 2]"#, "sync_check must be an object"),
        ])
    func refused(text: String, named: String) throws {
        let value = try #require(JSONValue.parse(Data(text.utf8)))
        #expect {
            _ = try SyncCheckEntry(json: value)
        } throws: { error in
            "\(error)".contains(named)
        }
    }

    @Test("each field of a pair, damaged in turn, is refused and named; a pair naming no stream of the session too")
    func damagedPairs() throws {
        let good = try #require(Self.entry.json.objectValue)
        let pair = try #require(good["pairs"]?.arrayValue?.first?.objectValue)
        let damages: [(String, JSONValue)] = [
            ("camera", 7), ("intrinsics", "yes"), ("skipped_frames", -1), ("missing_gyro_axes", ["w"]),
            ("frame_uncertainty_ns", -5), ("exceeds_frame_uncertainty", .null), ("image_alignment", "fine"),
            ("calibration_timeshift_cam_imu", "0.1"),
        ]
        for (key, value) in damages {
            var damaged = pair
            damaged[key] = value
            var document = good
            document["pairs"] = [.object(damaged)]
            #expect(throws: SyncCheckEntry.Problem.self, "\(key): \(value)") {
                try SyncCheckEntry(json: .object(document))
            }
        }
        for (key, value) in [("offset_ns", JSONValue(1.5)), ("frame_period_ns", 0), ("confidence", "high")] {
            var estimate = try #require(pair["image_alignment"]?.objectValue)
            estimate[key] = value
            var damaged = pair
            damaged["image_alignment"] = .object(estimate)
            var document = good
            document["pairs"] = [.object(damaged)]
            #expect {
                try SyncCheckEntry(json: .object(document))
            } throws: { error in
                "\(error)".contains("sync_check.pairs[0] (cam0–imu0).image_alignment.\(key)")
            }
        }
        #expect {
            try SyncCheckEntry(json: .object(good), streams: ["cam0", "imu1"])
        } throws: { error in
            "\(error)".contains("\"imu0\" is not a stream of the session")
        }
    }

    @Test("validate warns of a damaged sync_check (the session stays readable); the listing leaves it out")
    func validateAndListing() throws {
        let directory = try HoleValidationTests.makeSession()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let layout = SessionLayout(directory: directory)
        #expect(SessionValidator.validateWithVideos(directory: directory).problems.isEmpty)
        var entry = Self.entry
        entry.pairs = [entry.pairs[0]]
        entry.pairs[0].camera = "cam"
        entry.pairs[0].imu = "imu"
        entry.windowIMU = "imu"
        try Sidecar.storeSyncCheck(entry, layout: layout)
        #expect(SessionValidator.validateWithVideos(directory: directory).problems.isEmpty)
        #expect(SessionCatalog.entry(directory: directory, name: "rig").syncCheck == entry)

        var contents = try #require(Sidecar.Contents(layout: layout))
        contents.document[SyncCheckEntry.member] = ["checked_utc": "2026-11-29T10:00:00Z", "pairs": 3]
        try Sidecar.store(contents.document, layout: layout)
        let report = SessionValidator.validateWithVideos(directory: directory)
        let warnings = report.warnings.map(\.message)
        #expect(warnings.contains { $0.contains("sync_check.window_s must be an array of numbers") }, "\(warnings)")
        #expect(report.problems.isEmpty, "a derived member does not make the session unreadable: \(report.problems)")
        #expect(SessionCatalog.entry(directory: directory, name: "rig").syncCheck == nil)
    }
}
