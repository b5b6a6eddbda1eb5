import FieldcapCore
import FoundationEssentials

extension CameraCalibration {
    /// The calibration as the session's sidecar keeps it: Kalibr's keys and units, so that a
    /// reader who knows camchains knows these: pixels as integers, every other value a double.
    public var sidecarEntry: [String: JSONValue] {
        func numbers(_ values: [Double]) -> JSONValue { .array(values.map(JSONValue.double)) }
        var entry: [String: JSONValue] = [
            "camera_model": "pinhole",
            "resolution": [JSONValue(width), JSONValue(height)],
            "intrinsics": numbers([fx, fy, cx, cy]),
            "distortion_model": .string(distortionModel.rawValue),
            "distortion_coeffs": numbers(distortion),
        ]
        if let name { entry["name"] = .string(name) }
        if let cameraFromIMU {
            entry["T_cam_imu"] = .array((0..<4).map { row in numbers(Array(cameraFromIMU[row * 4..<row * 4 + 4])) })
        }
        if let timeshiftCamIMU { entry["timeshift_cam_imu"] = .double(timeshiftCamIMU) }
        return entry
    }

    /// Reads `sidecarEntry` back, as built or as read from a sidecar (`JSONValue.parse`: a
    /// whole number may come back an integer). `origin` is how errors name where the entry came
    /// from.
    public init(sidecarEntry entry: [String: JSONValue], origin: String = "the sidecar") throws(CalibrationError) {
        var reader = SidecarReader(origin: origin, camera: nil)
        if let name = entry["name"] {
            guard let name = name.stringValue else { throw reader.error("name must be text") }
            reader.camera = name
        }
        let model = try reader.text(entry, "camera_model")
        guard model == "pinhole" else {
            throw reader.error("camera_model \(model.quoted) is not supported, only pinhole is")
        }
        let resolution = try reader.numbers(entry, "resolution")
        guard resolution.count == 2, let width = Int(exactly: resolution[0]), let height = Int(exactly: resolution[1])
        else { throw reader.error("resolution must be [width, height] in whole pixels") }
        let intrinsics = try reader.numbers(entry, "intrinsics")
        guard intrinsics.count == 4 else {
            throw reader.error("intrinsics needs 4 values [fx, fy, cx, cy], found \(intrinsics.count)")
        }
        let modelName = try reader.text(entry, "distortion_model")
        guard let distortionModel = DistortionModel(rawValue: modelName) else {
            throw reader.error("distortion_model \(modelName.quoted) is not radtan, equidistant or none")
        }
        let distortion = try reader.numbers(entry, "distortion_coeffs")
        var cameraFromIMU: [Double]?
        if let rows = entry["T_cam_imu"] {
            guard let rows = rows.arrayValue, rows.count == 4 else {
                throw reader.error("T_cam_imu must be 4 rows of 4")
            }
            var matrix: [Double] = []
            for row in rows {
                guard let values = SidecarReader.numbers(row), values.count == 4 else {
                    throw reader.error("T_cam_imu must be 4 rows of 4 numbers")
                }
                matrix += values
            }
            cameraFromIMU = matrix
        }
        var timeshift: Double?
        if let value = entry["timeshift_cam_imu"] {
            guard let seconds = value.doubleValue else {
                throw reader.error("timeshift_cam_imu must be a number")
            }
            timeshift = seconds
        }
        self.init(
            name: reader.camera, width: width, height: height, fx: intrinsics[0], fy: intrinsics[1], cx: intrinsics[2],
            cy: intrinsics[3], distortionModel: distortionModel, distortion: distortion, cameraFromIMU: cameraFromIMU,
            timeshiftCamIMU: timeshift)
        if let problem { throw reader.error(problem) }
    }
}

/// Reads a sidecar entry's values, with errors that name where the entry came from and its camera.
private struct SidecarReader {
    var origin: String
    var camera: String?

    func error(_ problem: String) -> CalibrationError {
        CalibrationError(
            "\(origin): \(camera.map { "\($0): " } ?? "")calibration \(problem); fix the entry or record again")
    }

    func text(_ entry: [String: JSONValue], _ key: String) throws(CalibrationError) -> String {
        guard let value = entry[key] else { throw error("has no \(key)") }
        guard let text = value.stringValue else { throw error("\(key) must be text") }
        return text
    }

    func numbers(_ entry: [String: JSONValue], _ key: String) throws(CalibrationError) -> [Double] {
        guard let value = entry[key] else { throw error("has no \(key)") }
        guard let numbers = Self.numbers(value) else { throw error("\(key) must be a list of numbers") }
        return numbers
    }

    /// A list of numbers, each of any numeric case; nil when anything else is in it.
    static func numbers(_ value: JSONValue) -> [Double]? { value.arrayValue(of: \.doubleValue) }
}
