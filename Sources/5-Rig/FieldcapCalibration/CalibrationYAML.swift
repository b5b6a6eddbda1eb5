import FieldcapYAML
import FoundationEssentials

/// Reads a calibration file's YAML nodes, each value checked where it stands, so that every error
/// names the file, the camera being read and the value's line.
struct CalibrationYAML {
    /// How errors name the file: the path as the user gave it.
    var file: String
    /// The camera being read (`cam1`), for the errors; nil for a file of one unnamed camera.
    var camera: String?

    /// The file's root node; nil when the text holds no document.
    static func compose(_ text: String, file: String) throws(CalibrationError) -> YAMLNode? {
        do throws(YAMLError) {
            return try YAMLDocument.parse(text)
        } catch {
            throw CalibrationError(syntax: error, file: file)
        }
    }

    func error(at node: YAMLNode?, _ problem: String) -> CalibrationError {
        var place = file
        if let line = node?.line { place += " line \(line)" }
        if let camera { place += ": \(camera)" }
        return CalibrationError("\(place): \(problem)")
    }

    /// A mapping's entries by key. `foldingCase` is for OpenCV's files, whose own calibration
    /// sample wrote `Camera_Matrix` and `image_Width` before it wrote `camera_matrix`.
    func fields(_ node: YAMLNode, of what: String, foldingCase: Bool = false) throws(CalibrationError) -> Fields {
        guard case .mapping(let mapping) = node.content else {
            throw error(at: node, "\(what) must be a block of 'key: value' lines")
        }
        var fields = Fields(node: node, values: [:], order: [])
        for entry in mapping {
            guard let key = entry.key.scalar else {
                throw error(at: entry.key, "a key in \(what) must be a plain name")
            }
            let name = foldingCase ? key.lowercased() : key
            fields.values[name] = entry.value
            fields.order.append(name)
        }
        return fields
    }

    func text(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> String {
        guard let text = node.scalar, !text.isEmpty else {
            throw error(at: node, "\(key) must be a single value")
        }
        return text
    }

    /// A finite number. The text is read with Swift's own parser rather than YAML's implicit
    /// types, which take OpenCV's `0.` and `6.57e+002` but also `.inf` and `.nan`.
    func number(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> Double {
        guard let scalar = node.scalar else { throw error(at: node, "\(key) must be a number") }
        let text = scalar.trimmingBlanks
        // YAML's own spellings of infinity and not-a-number, which Double(_:) does not take.
        if [".inf", "+.inf", "-.inf", ".nan"].contains(text.lowercased()) {
            throw error(at: node, "\(key) is \(text.quoted): give a finite number")
        }
        guard let value = Double(text) else {
            throw error(at: node, "\(key) \(text.quoted) is not a number")
        }
        guard value.isFinite else { throw error(at: node, "\(key) is \(text.quoted): give a finite number") }
        return value
    }

    func integer(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> Int {
        guard let scalar = node.scalar else { throw error(at: node, "\(key) must be a whole number") }
        let text = scalar.trimmingBlanks
        guard let value = Int(text) else { throw error(at: node, "\(key) \(text.quoted) is not a whole number") }
        return value
    }

    /// A pixel count (a width or height): a whole number above zero.
    func size(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> Int {
        let value = try integer(node, key)
        guard value > 0 else { throw error(at: node, "\(key) must be above 0, found \(value)") }
        return value
    }

    func numbers(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> [Double] {
        guard case .sequence(let items) = node.content else {
            throw error(at: node, "\(key) must be a list of numbers, as [1.0, 2.0]")
        }
        var values: [Double] = []
        for item in items { values.append(try number(item, key)) }
        return values
    }

    /// An OpenCV-style matrix, `{rows, cols, data}` (OpenCV tags it `!!opencv-matrix`, ROS does
    /// not), whose data is checked to fill it.
    func matrix(_ node: YAMLNode, _ key: String) throws(CalibrationError) -> Matrix {
        let fields = try self.fields(node, of: key)
        let hint = "a matrix is written as rows, cols and data, the values row by row"
        let rows = try integer(fields.require("rows", in: key, self, hint: hint), "\(key) rows")
        let cols = try integer(fields.require("cols", in: key, self, hint: hint), "\(key) cols")
        let dataNode = try fields.require("data", in: key, self, hint: hint)
        let data = try numbers(dataNode, "\(key) data")
        guard rows > 0, cols > 0 else {
            throw error(at: node, "\(key) is \(rows)x\(cols): rows and cols must be above 0")
        }
        let (count, overflow) = rows.multipliedReportingOverflow(by: cols)
        guard !overflow, count == data.count else {
            throw error(
                at: dataNode, "\(key) is \(rows)x\(cols) but its data has \(data.count) values: give \(rows)x\(cols)")
        }
        return Matrix(rows: rows, cols: cols, data: data, node: node)
    }

    /// A mapping's entries by key, with the mapping's node for errors about a missing key.
    struct Fields {
        var node: YAMLNode
        var values: [String: YAMLNode]
        var order: [String]

        subscript(key: String) -> YAMLNode? { values[key] }

        func require(
            _ key: String, in what: String, _ yaml: CalibrationYAML, hint: String? = nil
        )
            throws(CalibrationError) -> YAMLNode
        {
            guard let value = values[key] else {
                throw yaml.error(at: node, "\(what) has no \(key)\(hint.map { ": \($0)" } ?? "")")
            }
            return value
        }
    }

    /// A row-major matrix as OpenCV and ROS write one.
    struct Matrix {
        var rows: Int
        var cols: Int
        var data: [Double]
        var node: YAMLNode

        subscript(row: Int, col: Int) -> Double { data[row * cols + col] }

        var isVector: Bool { rows == 1 || cols == 1 }
    }
}

extension CalibrationError {
    init(syntax error: YAMLError, file: String) {
        switch error {
        case .duplicateKeys:
            self.init("\(file) line \(error.line): \(error.problem); keep one")
        default:
            self.init("\(file) line \(error.line): not valid YAML: \(error.problem); fix the file's syntax")
        }
    }
}

extension String {
    /// Without the spaces and tabs around it (a quoted scalar keeps them; a number may not).
    var trimmingBlanks: String {
        func blank(_ character: Character) -> Bool { character.isWhitespace && !character.isNewline }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }

    /// The text in double quotes, escaped as Swift escapes it, so a quoted value cannot break the
    /// message's line or hide its own quotes.
    var quoted: String { String(reflecting: self) }
}
