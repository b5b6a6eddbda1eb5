import FieldcapYAML

/// Kalibr's camchain (`camchain.yaml`, `*-camchain-imucam.yaml`): one `camN:` block per camera.
///
///     cam0:
///       camera_model: pinhole
///       intrinsics: [461.629, 460.152, 362.680, 246.049]
///       distortion_model: radtan
///       distortion_coeffs: [-0.27695497, 0.06712482, 0.00087538, 0.00011556]
///       resolution: [752, 480]
///       T_cam_imu: [[...], [...], [...], [0.0, 0.0, 0.0, 1.0]]
///       timeshift_cam_imu: -8.121e-05
///
/// `rostopic`, `cam_overlaps` and `T_cn_cnm1` (camera from the previous camera, which
/// `T_cam_imu` already implies) are not kept.
enum KalibrCamchain {
    /// The camera's number in a `camN` key; nil for any other key.
    static func cameraNumber(_ key: String) -> Int? {
        guard key.hasPrefix("cam") else { return nil }
        let digits = key.dropFirst(3)
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else { return nil }
        return Int(digits)
    }

    static func isCamchain(_ top: CalibrationYAML.Fields) -> Bool {
        top.order.contains { cameraNumber($0) != nil }
    }

    /// The cameras by their number, whatever order the file lists them in: cam10 after cam9.
    static func cameras(_ top: CalibrationYAML.Fields, file: String) throws(CalibrationError) -> [CameraCalibration] {
        let keys = top.order.compactMap { key in cameraNumber(key).map { (key, $0) } }.sorted { $0.1 < $1.1 }
        var cameras: [CameraCalibration] = []
        for (key, _) in keys {
            cameras.append(try camera(top.values[key]!, yaml: CalibrationYAML(file: file, camera: key)))
        }
        return cameras
    }

    static func camera(_ node: YAMLNode, yaml: CalibrationYAML) throws(CalibrationError) -> CameraCalibration {
        let fields = try yaml.fields(node, of: "the camera")
        let modelNode = try fields.require("camera_model", in: "the camera", yaml, hint: "add camera_model: pinhole")
        let model = try yaml.text(modelNode, "camera_model")
        guard model == "pinhole" else {
            throw yaml.error(
                at: modelNode,
                "camera_model \(model.quoted) is not supported, only pinhole is:"
                    + " calibrate with Kalibr's pinhole-radtan or pinhole-equi model")
        }

        let intrinsicsNode = try fields.require("intrinsics", in: "the camera", yaml, hint: "add [fu, fv, pu, pv]")
        let intrinsics = try yaml.numbers(intrinsicsNode, "intrinsics")
        guard intrinsics.count == 4 else {
            throw yaml.error(
                at: intrinsicsNode, "pinhole intrinsics needs 4 values [fu, fv, pu, pv], found \(intrinsics.count)")
        }
        guard intrinsics[0] > 0, intrinsics[1] > 0 else {
            throw yaml.error(
                at: intrinsicsNode,
                "intrinsics fu \(intrinsics[0]) and fv \(intrinsics[1]) are focal lengths in pixels:"
                    + " both must be above 0")
        }

        let distortionNode = try fields.require(
            "distortion_model", in: "the camera", yaml, hint: "add radtan, equidistant or none")
        let distortionName = try yaml.text(distortionNode, "distortion_model")
        let distortionModel: CameraCalibration.DistortionModel
        switch distortionName {
        case "radtan": distortionModel = .radialTangential
        case "equidistant": distortionModel = .equidistant
        case "none": distortionModel = .none
        default:
            throw yaml.error(
                at: distortionNode,
                "distortion_model \(distortionName.quoted) is not supported: calibrate with radtan, equidistant or none"
            )
        }
        // Kalibr's radtan is always k1 k2 p1 p2, so only four will do here.
        let needed = distortionModel == .none ? 0 : 4
        var coefficients: [Double] = []
        if let coefficientsNode = fields["distortion_coeffs"] {
            coefficients = try yaml.numbers(coefficientsNode, "distortion_coeffs")
            guard coefficients.count == needed else {
                throw yaml.error(
                    at: coefficientsNode,
                    "distortion_model \(distortionName.quoted) needs \(needed) distortion_coeffs,"
                        + " found \(coefficients.count)")
            }
        } else if needed > 0 {
            throw yaml.error(
                at: node, "distortion_model \(distortionName.quoted) needs \(needed) distortion_coeffs, found none")
        }

        let resolutionNode = try fields.require("resolution", in: "the camera", yaml, hint: "add [width, height]")
        guard case .sequence(let resolution) = resolutionNode.content, resolution.count == 2 else {
            throw yaml.error(at: resolutionNode, "resolution must be [width, height]")
        }
        let width = try yaml.size(resolution[0], "resolution width")
        let height = try yaml.size(resolution[1], "resolution height")

        var cameraFromIMU: [Double]?
        if let transformNode = fields["T_cam_imu"] {
            cameraFromIMU = try transform(transformNode, "T_cam_imu", yaml: yaml)
        }
        let timeshift = try fields["timeshift_cam_imu"].map { node throws(CalibrationError) in
            try yaml.number(node, "timeshift_cam_imu")
        }

        let calibration = CameraCalibration(
            name: yaml.camera, width: width, height: height, fx: intrinsics[0], fy: intrinsics[1], cx: intrinsics[2],
            cy: intrinsics[3], distortionModel: distortionModel, distortion: coefficients,
            cameraFromIMU: cameraFromIMU, timeshiftCamIMU: timeshift)
        if let problem = calibration.problem { throw yaml.error(at: node, problem) }
        return calibration
    }

    /// A 4x4 as Kalibr writes it, four rows of four, row-major.
    static func transform(_ node: YAMLNode, _ key: String, yaml: CalibrationYAML) throws(CalibrationError) -> [Double] {
        guard case .sequence(let rows) = node.content, rows.count == 4 else {
            throw yaml.error(at: node, "\(key) must be 4 rows of 4 numbers")
        }
        var matrix: [Double] = []
        for row in rows {
            let values = try yaml.numbers(row, key)
            guard values.count == 4 else {
                throw yaml.error(at: row, "\(key) must be 4 rows of 4 numbers, found a row of \(values.count)")
            }
            matrix += values
        }
        if let problem = CameraCalibration.rigidProblem(matrix, key: key) { throw yaml.error(at: node, problem) }
        return matrix
    }
}
