import Testing

@testable import FieldcapCalibration

/// The message `assign` fails with, checked to be one line that names the file.
func assignError(_ file: CalibrationFile, _ cameras: [RecordedCamera], by match: CalibrationMatch) -> String? {
    do {
        let assigned = try file.assign(to: cameras, by: match)
        Issue.record("assigned \(assigned.keys.sorted()), expected an error")
        return nil
    } catch {
        #expect(isOneLine(error.message), "\(error.message)")
        #expect(error.message.hasPrefix(file.path), "\(error.message)")
        return error.message
    }
}

@Suite("Matching a file's cameras to the recorded ones")
struct CalibrationMatchTests {
    let kalibr = try! CalibrationFile.parse(Fixture.kalibr, path: "calib.yaml")
    let openCV = try! CalibrationFile.parse(Fixture.openCVPython, path: "calib.yaml")
    let ros = try! CalibrationFile.parse(Fixture.ros, path: "ost.yaml")

    @Test("the matches are spelled as the command line takes them")
    func rawValues() {
        #expect(CalibrationMatch.allCases.map(\.rawValue) == ["id", "order"])
    }

    @Test("by id, Kalibr's cam0 and cam1 calibrate the streams cam0 and cam1, whatever their order")
    func byID() throws {
        let recorded = [
            RecordedCamera(id: "cam1", width: 752, height: 480), RecordedCamera(id: "cam0", width: 752, height: 480),
            RecordedCamera(id: "cam2", width: 1920, height: 1080),
        ]
        let assigned = try kalibr.assign(to: recorded, by: .id)
        #expect(assigned == ["cam0": kalibr.cameras[0], "cam1": kalibr.cameras[1]])
    }

    @Test("by id, a file camera that is not recorded is named, with the recorded ids")
    func notRecorded() {
        let recorded = [RecordedCamera(id: "cam0", width: 752, height: 480)]
        #expect(
            assignError(kalibr, recorded, by: .id)
                == "calib.yaml: cam1 is not a recorded camera (recorded: cam0): give the camera the id cam1,"
                + " or use match=order")
        #expect(
            assignError(ros, [RecordedCamera(id: "cam0", width: 640, height: 480)], by: .id)?.hasPrefix(
                "ost.yaml: narrow_stereo is not a recorded camera (recorded: cam0)") == true)
        #expect(assignError(kalibr, [], by: .id)?.contains("(recorded: none)") == true)
    }

    @Test("by id, a camera without a name (OpenCV's) says to match by order")
    func unnamed() {
        #expect(
            assignError(openCV, [RecordedCamera(id: "cam0", width: 1280, height: 720)], by: .id)
                == "calib.yaml: its camera has no name to match a camera id by: use match=order")
    }

    @Test("by order, the file's first camera calibrates the first recorded camera; fewer in the file is fine")
    func byOrder() throws {
        let recorded = [
            RecordedCamera(id: "left", width: 752, height: 480), RecordedCamera(id: "right", width: 752, height: 480),
            RecordedCamera(id: "top", width: 640, height: 480),
        ]
        let assigned = try kalibr.assign(to: recorded, by: .order)
        #expect(assigned == ["left": kalibr.cameras[0], "right": kalibr.cameras[1]])
        let one = try openCV.assign(to: [RecordedCamera(id: "cam0", width: 1280, height: 720)], by: .order)
        #expect(one == ["cam0": openCV.cameras[0]])
    }

    @Test("by order, more cameras in the file than recorded is an error")
    func tooManyInFile() {
        #expect(
            assignError(kalibr, [RecordedCamera(id: "cam0", width: 752, height: 480)], by: .order)
                == "calib.yaml: calibrates 2 cameras, but 1 is recorded (cam0): record every camera it calibrates,"
                + " or give a file of these only")
    }

    @Test("either way, a calibration at another size than the recording's is an error that names both sizes")
    func resolutionMismatch() {
        let kalibr1280 = CalibrationFile(
            path: "calib.yaml", kind: .kalibr,
            cameras: kalibr.cameras.map {
                var camera = $0; camera.width = 1280; camera.height = 720; return camera
            })
        let recorded = [
            RecordedCamera(id: "cam0", width: 640, height: 480), RecordedCamera(id: "cam1", width: 640, height: 480),
        ]
        let expected =
            "calib.yaml: cam0 is calibrated at 1280x720, but cam0 records 640x480: calibrate at the recorded size"
            + " or record at 1280x720"
        #expect(assignError(kalibr1280, recorded, by: .id) == expected)
        #expect(assignError(kalibr1280, recorded, by: .order) == expected)
        #expect(
            assignError(openCV, [RecordedCamera(id: "front", width: 1280, height: 800)], by: .order)
                == "calib.yaml: its camera is calibrated at 1280x720, but front records 1280x800: calibrate at the"
                + " recorded size or record at 1280x720")
    }
}
