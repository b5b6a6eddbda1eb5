import FieldcapYAML

/// A calibration as OpenCV's `cv::FileStorage` writes it: what OpenCV's calibration sample saves
/// (`out_camera_data.yml`) and what a script's `cv2.FileStorage` writes.
///
///     %YAML:1.0
///     image_width: 1280
///     image_height: 720
///     fisheye_model: 0
///     camera_matrix: !!opencv-matrix
///        rows: 3
///        cols: 3
///        dt: d
///        data: [ 912.5, 0., 641.25, 0., 911.75, 362.5, 0., 0., 1. ]
///     distortion_coefficients: !!opencv-matrix
///        rows: 5
///        cols: 1
///        dt: d
///        data: [ 0.1021, -0.2543, 0.00051, -0.00032, 0.1187 ]
///
/// One camera, with no name. The sample's other keys (`calibration_time`, `flags`,
/// `avg_reprojection_error`, the per-view extrinsics, ...) are not kept.
enum OpenCVCalibration {
    static func isOpenCVMatrix(_ node: YAMLNode) -> Bool {
        guard case .mapping = node.content else { return false }
        return node.tag.hasSuffix("opencv-matrix")
    }

    static func camera(
        _ top: CalibrationYAML.Fields, yaml: CalibrationYAML
    ) throws(CalibrationError)
        -> CameraCalibration
    {
        let (width, height) = try imageSize(top, yaml: yaml)
        let intrinsics = try pinhole(top.require("camera_matrix", in: "the file", yaml), yaml: yaml)
        let model = try distortionModel(top, yaml: yaml)
        let coefficientsNode = try top.require(
            "distortion_coefficients", in: "the file", yaml,
            hint: "add the distortion coefficients the calibration returned")
        let coefficients = try vector(coefficientsNode, "distortion_coefficients", yaml: yaml)
        let counts = CameraCalibration.coefficientCounts(of: model)
        guard counts.contains(coefficients.count) else {
            let modelName = model == .equidistant ? "the fisheye model" : "the radial-tangential model"
            throw yaml.error(
                at: coefficientsNode,
                "distortion_coefficients has \(coefficients.count) values, but \(modelName) takes"
                    + " \(CameraCalibration.countsInWords(counts)): give all the coefficients the calibration returned"
            )
        }
        let calibration = CameraCalibration(
            name: yaml.camera, width: width, height: height, fx: intrinsics.fx, fy: intrinsics.fy,
            cx: intrinsics.cx, cy: intrinsics.cy, distortionModel: model, distortion: coefficients)
        if let problem = calibration.problem { throw yaml.error(at: top.node, problem) }
        return calibration
    }

    /// OpenCV's sample says fisheye with `fisheye_model: 1` (it writes 0 otherwise); a file of
    /// one's own may say `distortion_model: fisheye`.
    static func distortionModel(
        _ top: CalibrationYAML.Fields, yaml: CalibrationYAML
    ) throws(CalibrationError)
        -> CameraCalibration.DistortionModel
    {
        if let node = top["fisheye_model"], try fisheyeFlag(node, yaml: yaml) { return .equidistant }
        guard let node = top["distortion_model"] else { return .radialTangential }
        let name = try yaml.text(node, "distortion_model")
        switch name.lowercased() {
        case "fisheye", "equidistant": return .equidistant
        case "radtan", "plumb_bob", "rational_polynomial", "radial_tangential": return .radialTangential
        default:
            throw yaml.error(
                at: node,
                "distortion_model \(name.quoted) is not supported: give fisheye (equidistant) or plumb_bob (radtan)")
        }
    }

    static func fisheyeFlag(_ node: YAMLNode, yaml: CalibrationYAML) throws(CalibrationError) -> Bool {
        if let scalar = node.scalar, ["true", "false"].contains(scalar.lowercased()) {
            return scalar.lowercased() == "true"
        }
        return try yaml.number(node, "fisheye_model") != 0
    }

    static func imageSize(
        _ top: CalibrationYAML.Fields, yaml: CalibrationYAML
    ) throws(CalibrationError)
        -> (width: Int, height: Int)
    {
        let hint = "add the size the camera was calibrated at (image_width: 1280, image_height: 720)"
        let width = try yaml.size(top.require("image_width", in: "the file", yaml, hint: hint), "image_width")
        let height = try yaml.size(top.require("image_height", in: "the file", yaml, hint: hint), "image_height")
        return (width, height)
    }

    /// fx, fy, cx, cy from a 3x3 camera matrix, which must be a skew-free pinhole's: fieldcap
    /// keeps (and the exports write) four intrinsics, so a skew would be dropped without a word.
    static func pinhole(
        _ node: YAMLNode, yaml: CalibrationYAML
    ) throws(CalibrationError)
        -> (fx: Double, fy: Double, cx: Double, cy: Double)
    {
        let k = try yaml.matrix(node, "camera_matrix")
        guard k.rows == 3, k.cols == 3 else {
            throw yaml.error(at: node, "camera_matrix must be 3x3, found \(k.rows)x\(k.cols)")
        }
        guard k[0, 1] == 0 else {
            throw yaml.error(
                at: node,
                "camera_matrix has skew \(k[0, 1]) (row 1, column 2), which fieldcap does not support:"
                    + " calibrate with zero skew (OpenCV's default; fisheye::CALIB_FIX_SKEW)")
        }
        guard k[1, 0] == 0, k[2, 0] == 0, k[2, 1] == 0, k[2, 2] == 1 else {
            throw yaml.error(
                at: node, "camera_matrix is not a pinhole camera matrix: it must read fx 0 cx, 0 fy cy, 0 0 1")
        }
        guard k[0, 0] > 0, k[1, 1] > 0 else {
            throw yaml.error(
                at: node, "camera_matrix focal lengths fx \(k[0, 0]) and fy \(k[1, 1]) must both be above 0")
        }
        return (k[0, 0], k[1, 1], k[0, 2], k[1, 2])
    }

    /// A matrix of one row or one column: OpenCV writes coefficients either way (1x5, 5x1).
    static func vector(_ node: YAMLNode, _ key: String, yaml: CalibrationYAML) throws(CalibrationError) -> [Double] {
        let matrix = try yaml.matrix(node, key)
        guard matrix.isVector else {
            throw yaml.error(at: node, "\(key) must be one row or one column, found \(matrix.rows)x\(matrix.cols)")
        }
        return matrix.data
    }
}
