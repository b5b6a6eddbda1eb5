import FieldcapCore
import Foundation
import Testing

@testable import FieldcapCalibration

@Suite("Calibrations in the session's sidecar")
struct SidecarEntryTests {
    /// The entry written as JSON (by Foundation) and parsed back as fieldcap reads a sidecar
    /// between recording and export.
    func throughJSON(_ entry: [String: Any]) throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys])
        return try #require(PlainJSON.object(data))
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

    @Test("the entry uses Kalibr's keys, with plain Swift values")
    func entryShape() throws {
        let camera = try CalibrationFile.parse(Fixture.kalibr, path: "calib.yaml").cameras[0]
        let entry = camera.sidecarEntry
        #expect(entry["camera_model"] as? String == "pinhole")
        #expect(entry["name"] as? String == "cam0")
        #expect(entry["resolution"] as? [Int] == [752, 480])
        #expect(entry["intrinsics"] as? [Double] == [461.629, 460.152, 362.680, 246.049])
        #expect(entry["distortion_model"] as? String == "radtan")
        #expect(entry["distortion_coeffs"] as? [Double] == camera.distortion)
        let rows = try #require(entry["T_cam_imu"] as? [[Double]])
        #expect(rows.count == 4 && rows.allSatisfy { $0.count == 4 } && rows[3] == [0, 0, 0, 1])
        #expect(entry["timeshift_cam_imu"] as? Double == -8.121e-05)
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
        entry[key] = try JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed)
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
