import FieldcapYAML
import FoundationEssentials

/// A calibration file's cameras: a Kalibr camchain, an OpenCV calibration YAML or a ROS
/// camera_info YAML, told apart by what the file holds rather than by its name.
public struct CalibrationFile: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case kalibr, opencv, ros
    }

    /// How errors name the file: the path as given.
    public var path: String
    public var kind: Kind
    /// In the file's order (Kalibr's by camera number).
    public var cameras: [CameraCalibration]

    public init(path: String, kind: Kind, cameras: [CameraCalibration]) {
        self.path = path
        self.kind = kind
        self.cameras = cameras
    }

    static let accepted =
        "give a Kalibr camchain (cam0: ...), an OpenCV calibration YAML (camera_matrix, distortion_coefficients,"
        + " image_width, image_height) or a ROS camera_info YAML (ost.yaml)"

    /// Reads and checks the file at `path`.
    public static func read(path: String) throws(CalibrationError) -> CalibrationFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDirectory = false
            if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
                throw CalibrationError("\(path): no such file (give a Kalibr camchain or an OpenCV calibration YAML)")
            }
            throw CalibrationError(
                isDirectory
                    ? "\(path): is a directory; give the calibration file in it (camchain.yaml, ost.yaml, ...)"
                    : "\(path): cannot be read (permission denied?); make it readable")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CalibrationError("\(path): is not UTF-8 text; \(accepted)")
        }
        return try parse(text, path: path)
    }

    /// Parses calibration text; `path` is how errors name the file.
    public static func parse(_ text: String, path: String) throws(CalibrationError) -> CalibrationFile {
        let (yamlText, openCVHeader) = withoutOpenCVDirective(text)
        let yaml = CalibrationYAML(file: path)
        guard let root = try CalibrationYAML.compose(yamlText, file: path) else {
            throw CalibrationError("\(path): is empty; \(accepted)")
        }
        guard case .mapping = root.content else {
            throw yaml.error(at: root, "is not a calibration fieldcap reads; \(accepted)")
        }
        let top = try yaml.fields(root, of: "the file")
        if KalibrCamchain.isCamchain(top) {
            return CalibrationFile(path: path, kind: .kalibr, cameras: try KalibrCamchain.cameras(top, file: path))
        }
        let folded = try yaml.fields(root, of: "the file", foldingCase: true)
        if let matrix = folded["camera_matrix"] {
            if openCVHeader || OpenCVCalibration.isOpenCVMatrix(matrix) {
                return CalibrationFile(
                    path: path, kind: .opencv, cameras: [try OpenCVCalibration.camera(folded, yaml: yaml)])
            }
            return CalibrationFile(path: path, kind: .ros, cameras: [try ROSCameraInfo.camera(folded, file: path)])
        }
        throw CalibrationError("\(path): is not a calibration fieldcap reads (no cam0, no camera_matrix); \(accepted)")
    }

    /// OpenCV writes its YAML directive as `%YAML:1.0`, which libyaml rejects, and OpenCV 5
    /// writes `%YAML 1.2`; the line is emptied rather than removed, so the lines that errors
    /// name are still the file's.
    static func withoutOpenCVDirective(_ text: String) -> (text: String, openCVHeader: Bool) {
        guard text.hasPrefix("%YAML") else { return (text, false) }
        let firstLineEnd = text.firstIndex(where: \.isNewline) ?? text.endIndex
        let openCVHeader = text[..<firstLineEnd].hasPrefix("%YAML:")
        return (String(text[firstLineEnd...]), openCVHeader)
    }
}
