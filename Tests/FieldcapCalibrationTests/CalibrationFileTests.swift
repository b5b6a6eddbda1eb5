import Foundation
import Testing

@testable import FieldcapCalibration

/// The message `parse` fails with, checked to be one line that names the file.
func parseError(_ text: String, path: String = "calib.yaml") -> String? {
    do {
        let file = try CalibrationFile.parse(text, path: path)
        Issue.record("parsed as \(file.kind) with \(file.cameras.count) cameras, expected an error")
        return nil
    } catch {
        #expect(isOneLine(error.message), "\(error.message)")
        #expect(error.message.hasPrefix(path), "\(error.message)")
        #expect(error.description == error.message)
        return error.message
    }
}

@Suite("Kalibr camchains")
struct KalibrCamchainTests {
    @Test("a camchain's cameras come in camera order, with intrinsics, distortion, T_cam_imu and timeshift")
    func parsesCamchain() throws {
        let file = try CalibrationFile.parse(Fixture.kalibr, path: "camchain-imucam.yaml")
        #expect(file.kind == .kalibr)
        #expect(file.path == "camchain-imucam.yaml")
        #expect(file.cameras.map(\.name) == ["cam0", "cam1"])
        let cam0 = file.cameras[0]
        #expect(cam0.width == 752 && cam0.height == 480)
        #expect([cam0.fx, cam0.fy, cam0.cx, cam0.cy] == [461.629, 460.152, 362.680, 246.049])
        #expect(cam0.distortionModel == .radialTangential)
        #expect(cam0.distortion == [-0.27695497, 0.06712482, 0.00087538, 0.00011556])
        #expect(cam0.cameraFromIMU?.count == 16)
        #expect(cam0.cameraFromIMU?[0...3] == [0.01779318, 0.99967549, -0.01822936, 0.07008565])
        #expect(cam0.cameraFromIMU?[12...] == [0, 0, 0, 1])
        #expect(cam0.timeshiftCamIMU == -8.121e-05)
        let cam1 = file.cameras[1]
        #expect(cam1.distortionModel == .equidistant)
        #expect(cam1.distortion == [-0.0033, 0.0226, -0.0243, 0.0098])
        #expect(cam1.timeshiftCamIMU == -8.681e-05)
    }

    @Test("cameras are ordered by their number, not as listed: cam10 after cam2")
    func ordersByNumber() throws {
        let camera = { (size: String) in
            """
              camera_model: pinhole
              intrinsics: [400, 400, 320, 240]
              distortion_model: none
              resolution: \(size)

            """
        }
        let text =
            "cam10:\n" + camera("[640, 480]") + "cam2:\n" + camera("[1280, 720]") + "cam0:\n" + camera("[320, 240]")
        let file = try CalibrationFile.parse(text, path: "calib.yaml")
        #expect(file.cameras.map(\.name) == ["cam0", "cam2", "cam10"])
        #expect(file.cameras.map(\.width) == [320, 1280, 640])
        #expect(file.cameras.allSatisfy { $0.distortion.isEmpty && $0.cameraFromIMU == nil })
    }

    @Test("too few distortion_coeffs: the line, the camera, the model and both counts")
    func coefficientCount() {
        let text = """
            cam0:
              camera_model: pinhole
              intrinsics: [400, 400, 320, 240]
              distortion_model: none
              resolution: [640, 480]
            cam1:
              distortion_coeffs: [0.1, 0.2, 0.3]
              camera_model: pinhole
              intrinsics: [400, 400, 320, 240]
              distortion_model: radtan
              resolution: [640, 480]
            """
        #expect(
            parseError(text)
                == "calib.yaml line 7: cam1: distortion_model \"radtan\" needs 4 distortion_coeffs, found 3")
    }

    @Test("a camera model other than pinhole is named with its camera and refused")
    func omniCamera() throws {
        let text = Fixture.replacing(
            "camera_model: pinhole\n  intrinsics: [460.883", with: "camera_model: omni\n  intrinsics: [460.883",
            in: Fixture.kalibr)
        let message = try #require(parseError(text))
        #expect(message.hasPrefix("calib.yaml line 16: cam1: camera_model \"omni\" is not supported"))
        #expect(message.contains("pinhole"))
    }

    @Test(
        "each malformed value is refused at its line, naming the camera",
        arguments: [
            (
                "intrinsics: [461.629, 460.152, 362.680, 246.049]", "intrinsics: [461.629, 460.152, 362.680]", 3,
                "pinhole intrinsics needs 4 values"
            ),
            (
                "intrinsics: [461.629, 460.152, 362.680, 246.049]", "intrinsics: [-461.629, 460.152, 362.680, 246.049]",
                3,
                "must be above 0"
            ),
            (
                "intrinsics: [461.629, 460.152, 362.680, 246.049]", "intrinsics: [461.629, .nan, 362.680, 246.049]", 3,
                "give a finite number"
            ),
            (
                "intrinsics: [461.629, 460.152, 362.680, 246.049]", "intrinsics: [461.629, abc, 362.680, 246.049]", 3,
                "intrinsics \"abc\" is not a number"
            ),
            ("distortion_model: radtan", "distortion_model: fov", 4, "distortion_model \"fov\" is not supported"),
            ("resolution: [752, 480]\ncam1", "resolution: [752, 0]\ncam1", 14, "resolution height must be above 0"),
            ("resolution: [752, 480]\ncam1", "resolution: [752]\ncam1", 14, "resolution must be [width, height]"),
            ("resolution: [752, 480]\ncam1", "resolution: [752, 480.5]\ncam1", 14, "not a whole number"),
            (
                "- [0.0, 0.0, 0.0, 1.0]\n  timeshift_cam_imu: -8.121e-05",
                "- [0.0, 0.0, 1.0, 1.0]\n  timeshift_cam_imu: -8.121e-05", 7,
                "last row must be 0 0 0 1, found 0.0 0.0 1.0 1.0"
            ),
            (
                "- [0.0, 0.0, 0.0, 1.0]\n  timeshift_cam_imu: -8.121e-05", "timeshift_cam_imu: -8.121e-05", 7,
                "T_cam_imu must be 4 rows of 4 numbers"
            ),
            (
                "- [0.00893160, 0.01807260, 0.99979678, 0.00399246]", "- [0.00893160, 0.01807260, 2.0, 0.00399246]", 7,
                "not a rotation"
            ),
            (
                "- [0.00893160, 0.01807260, 0.99979678, 0.00399246]", "- [-0.00893160, -0.01807260, -0.99979678, 0.0]",
                7,
                "a reflection"
            ),
            (
                "- [0.00893160, 0.01807260, 0.99979678, 0.00399246]", "- [0.00893160, 0.01807260, 0.99979678]", 9,
                "found a row of 3"
            ),
            ("timeshift_cam_imu: -8.121e-05", "timeshift_cam_imu: .inf", 11, "give a finite number"),
        ])
    func malformedCam0(old: String, new: String, line: Int, problem: String) throws {
        let message = try #require(parseError(Fixture.replacing(old, with: new, in: Fixture.kalibr)))
        #expect(message.hasPrefix("calib.yaml line \(line): cam0: "), "\(message)")
        #expect(message.contains(problem), "\(message)")
    }

    @Test("a required key that is missing is named, with what to add")
    func missingKey() throws {
        let text = Fixture.replacing("  resolution: [752, 480]\ncam1", with: "cam1", in: Fixture.kalibr)
        #expect(parseError(text) == "calib.yaml line 2: cam0: the camera has no resolution: add [width, height]")
        let noModel = Fixture.replacing(
            "  camera_model: pinhole\n  intrinsics: [461", with: "  intrinsics: [461", in: Fixture.kalibr)
        #expect(
            parseError(noModel)?.contains("cam0: the camera has no camera_model: add camera_model: pinhole") == true)
    }
}

@Suite("OpenCV calibration files")
struct OpenCVCalibrationTests {
    @Test("OpenCV 4's calibration sample output: %YAML:1.0, a 5x1 radial-tangential distortion, one unnamed camera")
    func sample() throws {
        let file = try CalibrationFile.parse(Fixture.openCVSample, path: "out_camera_data.yml")
        #expect(file.kind == .opencv)
        let camera = try #require(file.cameras.first)
        #expect(file.cameras.count == 1)
        #expect(camera.name == nil)
        #expect(camera.width == 640 && camera.height == 480)
        #expect(
            [camera.fx, camera.fy, camera.cx, camera.cy] == [657.46697810243404, 657.46697810243404, 319.5, 239.5])
        #expect(camera.distortionModel == .radialTangential)
        #expect(camera.distortion == [-0.41802327018241026, 0.50715243805833121, 0, 0, -0.57843596847939704])
        #expect(camera.cameraFromIMU == nil && camera.timeshiftCamIMU == nil)
    }

    @Test("the sample's older output, with capitalised keys and three-digit exponents, reads the same")
    func oldSample() throws {
        let old = try CalibrationFile.parse(Fixture.openCVOldSample, path: "out_camera_data.yml")
        let new = try CalibrationFile.parse(Fixture.openCVSample, path: "out_camera_data.yml")
        #expect(old == new)
    }

    @Test("what cv2.FileStorage writes (OpenCV 5, %YAML 1.2, 1x5) parses to the values written")
    func python() throws {
        let file = try CalibrationFile.parse(Fixture.openCVPython, path: "cv2.yaml")
        #expect(file.kind == .opencv)
        #expect(
            file.cameras == [
                CameraCalibration(
                    name: nil, width: 1280, height: 720, fx: 912.5, fy: 911.75, cx: 641.25, cy: 362.5,
                    distortionModel: .radialTangential, distortion: [0.1021, -0.2543, 0.00051, -0.00032, 0.1187])
            ])
    }

    @Test("fisheye_model: 1 makes the four coefficients equidistant; distortion_model: fisheye does too")
    func fisheye() throws {
        let file = try CalibrationFile.parse(Fixture.openCVPythonFisheye, path: "cv2.yaml")
        let camera = try #require(file.cameras.first)
        #expect(camera.distortionModel == .equidistant)
        #expect(camera.distortion == [-0.0112, 0.0473, -0.0451, 0.0079])
        #expect([camera.fx, camera.fy, camera.cx, camera.cy] == [285.72, 285.93, 319.41, 241.07])
        let named = Fixture.replacing(
            "fisheye_model: 1", with: "distortion_model: fisheye", in: Fixture.openCVPythonFisheye)
        #expect(try CalibrationFile.parse(named, path: "cv2.yaml") == file)
    }

    @Test("a file read from disk is the same as its text parsed")
    func readsFromDisk() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("calib-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("out_camera_data.yml").path
        try Fixture.openCVSample.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try CalibrationFile.read(path: path) == CalibrationFile.parse(Fixture.openCVSample, path: path))
        do {
            _ = try CalibrationFile.read(path: directory.path)
            Issue.record("read a directory")
        } catch {
            #expect(error.message.hasPrefix("\(directory.path): is a directory; give the calibration file"))
        }
    }

    @Test(
        "each malformed value is refused at its line",
        arguments: [
            (
                "data: [ 6.5746697810243404e+02, 0., 3.19", "data: [ 6.5746697810243404e+02, 0.5, 3.19", 14,
                "camera_matrix has skew 0.5 (row 1, column 2), which fieldcap does not support"
            ),
            ("0., 0., 1. ]", "0., 0., 2. ]", 14, "camera_matrix is not a pinhole camera matrix"),
            ("0., 0., 1. ]", "0., 0. ]", 18, "camera_matrix is 3x3 but its data has 8 values"),
            (
                "   cols: 3\n   dt: d\n   data: [ 6.57", "   cols: 2\n   dt: d\n   data: [ 6.57", 18,
                "camera_matrix is 3x2 but its data has 9 values"
            ),
            (
                "data: [ 6.5746697810243404e+02, 0., 3.19", "data: [ -6.5746697810243404e+02, 0., 3.19", 14,
                "focal lengths fx -657.466978102434 and fy 657.466978102434 must both be above 0"
            ),
            (
                "rows: 5\n   cols: 1\n   dt: d\n   data: [ -4", "rows: 6\n   cols: 1\n   dt: d\n   data: [ 0.1, -4", 20,
                "distortion_coefficients has 6 values, but the radial-tangential model takes 4, 5, 8, 12 or 14"
            ),
            (
                "fisheye_model: 0", "fisheye_model: 1", 20,
                "distortion_coefficients has 5 values, but the fisheye model takes 4"
            ),
            ("rows: 5\n   cols: 1", "rows: 5\n   cols: 2", 24, "its data has 5 values"),
            (
                "rows: 5\n   cols: 1\n   dt: d\n   data: [ -4", "rows: 2\n   cols: 3\n   dt: d\n   data: [ 0.1, -4", 20,
                "distortion_coefficients must be one row or one column, found 2x3"
            ),
            ("image_width: 640", "image_width: -640", 5, "image_width must be above 0, found -640"),
            ("image_width: 640", "image_width: wide", 5, "image_width \"wide\" is not a whole number"),
            (
                "fisheye_model: 0", "fisheye_model: 0\ndistortion_model: division", 14,
                "distortion_model \"division\" is not supported"
            ),
        ])
    func malformed(old: String, new: String, line: Int, problem: String) throws {
        let message = try #require(parseError(Fixture.replacing(old, with: new, in: Fixture.openCVSample)))
        #expect(message.hasPrefix("calib.yaml line \(line): "), "\(message)")
        #expect(message.contains(problem), "\(message)")
    }

    @Test("a file without the image size says to add it")
    func missingSize() {
        let text = Fixture.replacing("image_height: 480\n", with: "", in: Fixture.openCVSample)
        #expect(
            parseError(text)
                == "calib.yaml line 3: the file has no image_height: add the size the camera was calibrated at"
                + " (image_width: 1280, image_height: 720)")
    }
}

@Suite("ROS camera_info files")
struct ROSCameraInfoTests {
    @Test("ost.yaml: one camera named by camera_name, plumb_bob's five coefficients")
    func ost() throws {
        let file = try CalibrationFile.parse(Fixture.ros, path: "ost.yaml")
        #expect(file.kind == .ros)
        #expect(
            file.cameras == [
                CameraCalibration(
                    name: "narrow_stereo", width: 640, height: 480, fx: 635.02435, fy: 635.50964, cx: 318.62018,
                    cy: 243.98123, distortionModel: .radialTangential,
                    distortion: [0.101839, -0.238965, 0.001236, -0.000628, 0])
            ])
        #expect(file.cameras[0].rosDistortionModel == "plumb_bob")
    }

    @Test("rational_polynomial takes eight coefficients, equidistant four")
    func otherModels() throws {
        let rational = Fixture.replacing(
            "plumb_bob", with: "rational_polynomial",
            in: Fixture.replacing(
                "cols: 5\n  data: [0.101839", with: "cols: 8\n  data: [0.3, 0.2, 0.1, 0.101839", in: Fixture.ros))
        let camera = try #require(try CalibrationFile.parse(rational, path: "ost.yaml").cameras.first)
        #expect(camera.distortion.count == 8)
        #expect(camera.rosDistortionModel == "rational_polynomial")
        let fisheye = Fixture.replacing(
            "plumb_bob", with: "equidistant",
            in: Fixture.replacing("cols: 5\n  data: [0.101839, ", with: "cols: 4\n  data: [", in: Fixture.ros))
        #expect(try CalibrationFile.parse(fisheye, path: "ost.yaml").cameras.first?.distortionModel == .equidistant)
    }

    @Test("an empty camera_name names no camera; a matrix without data is refused at its line")
    func unnamed() throws {
        let unnamed = Fixture.replacing("camera_name: narrow_stereo", with: "camera_name: \"\"", in: Fixture.ros)
        #expect(try CalibrationFile.parse(unnamed, path: "ost.yaml").cameras.first?.name == nil)
        let noData = Fixture.replacing("cols: 4\n  data:", with: "cols: 4\n  values:", in: unnamed)
        #expect(
            parseError(noData)
                == "calib.yaml line 22: projection_matrix has no data: a matrix is written as rows, cols and data,"
                + " the values row by row")
        let zero = Fixture.replacing("rows: 3\n  cols: 4", with: "rows: 0\n  cols: 4", in: unnamed)
        #expect(parseError(zero) == "calib.yaml line 22: projection_matrix is 0x4: rows and cols must be above 0")
    }

    @Test(
        "each malformed value is refused at its line, naming the camera",
        arguments: [
            (
                "cols: 5\n  data: [0.101839, ", "cols: 4\n  data: [", 12,
                "distortion_model \"plumb_bob\" needs 5 distortion_coefficients, found 4"
            ),
            ("plumb_bob", "fov", 10, "distortion_model \"fov\" is not supported"),
            ("  rows: 3\n  cols: 4", "  rows: 4\n  cols: 3", 22, "projection_matrix must be 3x4, found 4x3"),
            ("data: [635.02435,   0.     ,", "data: [635.02435,   1.5     ,", 5, "camera_matrix has skew 1.5"),
        ])
    func malformed(old: String, new: String, line: Int, problem: String) throws {
        let message = try #require(parseError(Fixture.replacing(old, with: new, in: Fixture.ros)))
        #expect(message.hasPrefix("calib.yaml line \(line): narrow_stereo: "), "\(message)")
        #expect(message.contains(problem), "\(message)")
    }
}

@Suite("Calibration files fieldcap does not read")
struct UnreadableCalibrationFileTests {
    @Test("a missing file says which files to give")
    func missingFile() {
        do {
            _ = try CalibrationFile.read(path: "/nonexistent/calib.yaml")
            Issue.record("read a missing file")
        } catch {
            #expect(
                error.message
                    == "/nonexistent/calib.yaml: no such file (give a Kalibr camchain or an OpenCV calibration YAML)")
        }
    }

    @Test("another YAML file names the formats accepted")
    func unknownFormat() throws {
        let message = try #require(parseError("imu0:\n  accelerometer_noise_density: 0.01\n"))
        #expect(message.hasPrefix("calib.yaml: is not a calibration fieldcap reads"))
        for format in ["Kalibr camchain", "OpenCV calibration YAML", "ROS camera_info YAML"] {
            #expect(message.contains(format))
        }
        #expect(
            parseError("- cam0\n- cam1\n")?.hasPrefix("calib.yaml line 1: is not a calibration fieldcap reads") == true)
        #expect(parseError("")?.hasPrefix("calib.yaml: is empty") == true)
    }

    @Test("a YAML syntax error and a key given twice name their line")
    func syntax() {
        #expect(
            parseError("cam0:\n  intrinsics: [1, 2\n  camera_model: pinhole\n")?.hasPrefix("calib.yaml line ") == true)
        let twice = "cam0:\n  camera_model: pinhole\n  camera_model: omni\n"
        #expect(parseError(twice)?.contains("\"camera_model\" given twice") == true)
    }

    @Test("a quoted value with a line break keeps the message on one line")
    func oneLine() throws {
        let text = Fixture.replacing(
            "camera_model: pinhole\n  intrinsics: [461", with: "camera_model: \"a\\nb\"\n  intrinsics: [461",
            in: Fixture.kalibr)
        let message = try #require(parseError(text))
        #expect(message.contains("camera_model \"a\\nb\""))
    }
}
