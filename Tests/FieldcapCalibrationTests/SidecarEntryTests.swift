import FieldcapCore
import Foundation
import Testing

@testable import FieldcapCalibration

@Suite("Calibrations in the session's sidecar")
struct SidecarEntryTests {
    /// The entry written as JSON and parsed back as fieldcap reads a sidecar between recording
    /// and export (a whole double comes back an integer).
    func throughJSON(_ entry: [String: JSONValue]) throws -> [String: JSONValue] {
        let text = try #require(JSONValue.object(entry).compactText())
        return try #require(JSONValue.parse(Array(text.utf8))?.objectValue)
    }

    @Test("a Kalibr camera comes back equal through JSON, T_cam_imu and timeshift included")
    func kalibrRoundTrip() throws {
        let file = try CalibrationFile.parse(Fixture.kalibr, path: "calib.yaml")
        for camera in file.cameras {
            #expect(try CameraCalibration(sidecarEntry: throughJSON(camera.sidecarEntry)) == camera)
            #expect(try CameraCalibration(sidecarEntry: camera.sidecarEntry) == camera)
        }
    }

    @Test("an unnamed OpenCV camera comes back equal, without a name key")
    func openCVRoundTrip() throws {
        let camera = try #require(try CalibrationFile.parse(Fixture.openCVSample, path: "calib.yaml").cameras.first)
        let entry = camera.sidecarEntry
        #expect(entry["name"] == nil && entry["T_cam_imu"] == nil && entry["timeshift_cam_imu"] == nil)
        #expect(try CameraCalibration(sidecarEntry: throughJSON(entry)) == camera)
    }

    @Test("the entry uses Kalibr's keys: pixels as integers, the other numbers as doubles")
    func entryShape() throws {
        let camera = try CalibrationFile.parse(Fixture.kalibr, path: "calib.yaml").cameras[0]
        let entry = camera.sidecarEntry
        #expect(entry["camera_model"] == "pinhole")
        #expect(entry["name"] == "cam0")
        #expect(entry["resolution"] == [.integer(752), .integer(480)])
        #expect(entry["intrinsics"] == [.double(461.629), .double(460.152), .double(362.680), .double(246.049)])
        #expect(entry["distortion_model"] == "radtan")
        #expect(entry["distortion_coeffs"] == .array(camera.distortion.map(JSONValue.double)))
        let rows = try #require(entry["T_cam_imu"]?.arrayValue(of: \.arrayValue))
        #expect(rows.count == 4 && rows.allSatisfy { $0.count == 4 } && rows[3] == [0.0, 0.0, 0.0, 1.0])
        #expect(entry["timeshift_cam_imu"] == .double(-8.121e-05))
    }

    @Test(
        "an entry that is not a calibration is refused, naming the sidecar and the camera",
        arguments: [
            ("intrinsics", "[1.0, 2.0]", "intrinsics needs 4 values"),
            ("resolution", "[640.5, 480]", "resolution must be [width, height] in whole pixels"),
            ("distortion_model", #""fisheye""#, "distortion_model \"fisheye\" is not radtan, equidistant or none"),
            ("distortion_coeffs", "[0.1]", "needs 4, 5, 8, 12 or 14 coefficients, found 1"),
            ("camera_model", #""omni""#, "camera_model \"omni\" is not supported"),
            ("T_cam_imu", "[[1.0, 0, 0, 0]]", "T_cam_imu must be 4 rows of 4"),
            ("timeshift_cam_imu", #""soon""#, "timeshift_cam_imu must be a number"),
        ])
    func malformed(key: String, json: String, problem: String) throws {
        var entry = try CalibrationFile.parse(Fixture.kalibr, path: "calib.yaml").cameras[0].sidecarEntry
        entry[key] = try #require(JSONValue.parse(Array(json.utf8)))
        let parsed = try throughJSON(entry)
        do {
            _ = try CameraCalibration(sidecarEntry: parsed, origin: "session.json")
            Issue.record("read a malformed entry")
        } catch {
            #expect(error.message.hasPrefix("session.json: cam0: calibration "), "\(error.message)")
            #expect(error.message.contains(problem), "\(error.message)")
            #expect(isOneLine(error.message))
        }
    }

    @Test("a missing key is named")
    func missingKey() {
        var entry = CameraCalibration(
            name: nil, width: 640, height: 480, fx: 500, fy: 500, cx: 320, cy: 240, distortionModel: .none,
            distortion: []
        ).sidecarEntry
        entry["intrinsics"] = nil
        do {
            _ = try CameraCalibration(sidecarEntry: entry)
            Issue.record("read an entry without intrinsics")
        } catch {
            #expect(error.message == "the sidecar: calibration has no intrinsics; fix the entry or record again")
        }
    }
}
