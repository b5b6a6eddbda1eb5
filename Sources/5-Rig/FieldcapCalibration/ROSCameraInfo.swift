import FieldcapYAML

/// A calibration as ROS's camera_calibration saves it (`ost.yaml`, camera_info_manager's files).
///
///     image_width: 640
///     image_height: 480
///     camera_name: narrow_stereo
///     camera_matrix:
///       rows: 3
///       cols: 3
///       data: [635.1, 0, 310.6, 0, 636.2, 249.4, 0, 0, 1]
///     distortion_model: plumb_bob
///     distortion_coefficients:
///       rows: 1
///       cols: 5
///       data: [0.1, -0.2, 0.001, 0.002, 0]
///     rectification_matrix: {rows: 3, cols: 3, data: [...]}
///     projection_matrix: {rows: 3, cols: 4, data: [...]}
///
/// One camera, named by `camera_name`. The rectification and projection matrices are checked
/// but not kept: they belong to a stereo pair's rectification, not to the camera.
enum ROSCameraInfo {
    /// ROS's `distortion_model` names, and how many coefficients each takes (ROS requires
    /// exactly these counts in `D`).
    static let models: [String: (CameraCalibration.DistortionModel, Int)] = [
        "plumb_bob": (.radialTangential, 5), "rational_polynomial": (.radialTangential, 8),
        "equidistant": (.equidistant, 4),
    ]

    static func camera(_ top: CalibrationYAML.Fields, file: String) throws(CalibrationError) -> CameraCalibration {
        var yaml = CalibrationYAML(file: file)
        // An empty camera_name names no camera, as an absent one does.
        if let nameNode = top["camera_name"], nameNode.scalar?.isEmpty != true {
            yaml.camera = try yaml.text(nameNode, "camera_name")
        }
        let (width, height) = try OpenCVCalibration.imageSize(top, yaml: yaml)
        let intrinsics = try OpenCVCalibration.pinhole(top.require("camera_matrix", in: "the file", yaml), yaml: yaml)

        let modelNode = try top.require(
            "distortion_model", in: "the file", yaml, hint: "add plumb_bob, rational_polynomial or equidistant")
        let modelName = try yaml.text(modelNode, "distortion_model")
        guard let (model, count) = models[modelName] else {
            throw yaml.error(
                at: modelNode,
                "distortion_model \(modelName.quoted) is not supported: calibrate with plumb_bob, rational_polynomial"
                    + " or equidistant")
        }
        let coefficientsNode = try top.require(
            "distortion_coefficients", in: "the file", yaml, hint: "add the \(count) coefficients of \(modelName)")
        let coefficients = try OpenCVCalibration.vector(coefficientsNode, "distortion_coefficients", yaml: yaml)
        guard coefficients.count == count else {
            throw yaml.error(
                at: coefficientsNode,
                "distortion_model \(modelName.quoted) needs \(count) distortion_coefficients,"
                    + " found \(coefficients.count)")
        }

        for (key, rows, cols) in [("rectification_matrix", 3, 3), ("projection_matrix", 3, 4)] {
            guard let node = top[key] else { continue }
            let matrix = try yaml.matrix(node, key)
            guard matrix.rows == rows, matrix.cols == cols else {
                throw yaml.error(at: node, "\(key) must be \(rows)x\(cols), found \(matrix.rows)x\(matrix.cols)")
            }
        }

        let calibration = CameraCalibration(
            name: yaml.camera, width: width, height: height, fx: intrinsics.fx, fy: intrinsics.fy,
            cx: intrinsics.cx, cy: intrinsics.cy, distortionModel: model, distortion: coefficients)
        if let problem = calibration.problem { throw yaml.error(at: top.node, problem) }
        return calibration
    }
}
