import FieldcapYAML
import FoundationEssentials
import SyncField

/// A rig described in one YAML file: what `fieldcap --config rig.yaml` records and
/// `fieldcap check --config rig.yaml` verifies.
///
///     host_id: rig07
///     output: /var/lib/fieldcap/sessions
///     min_free: 2G
///     preview_blur_faces: true      # serve's live previews show faces covered
///     upload_blur_faces: true       # serve --server uploads videos with faces covered
///     cameras:
///       - device: /dev/v4l/by-id/usb-046d_C920_A1B2C3-video-index0
///         id: cam_left
///         size: 1280x720
///         fps: 30
///         controls: { exposure_auto: 1 }
///     imus:
///       - device: bmi160
///         rate: 1000
///     sensors:
///       - device: feed:gripper      # a local program feeds it JSON lines
///         rate: 100
///         channels: [width, force]
///
/// Every error names the file and line. Values are read as text and checked by the same code
/// as the command line's `--cam`/`--imu`/`--sensor` options, so YAML's implicit typing (`no` as false,
/// `010` as octal) never changes what a value means.
public struct RigConfig: Sendable {
    public var path: String
    public var hostId: String?
    public var output: String?
    public var minFree: ByteSize?
    public var syncEvery: TimeSpan?
    public var duration: TimeSpan?
    /// Record in segments this long (`--segment`), within `maxStorage` and `keep`.
    public var segment: TimeSpan?
    public var maxStorage: ByteSize?
    public var keep: TimeSpan?
    /// `FILE[,match=id|order]`, as `--intrinsics`; a relative FILE is the config's neighbour.
    public var intrinsics: String?
    /// Cover the faces in the live previews (`serve --preview-blur-faces`).
    public var previewBlurFaces: Bool?
    /// Cover the faces in what `serve --server` uploads to a capture server (`--blur-faces`).
    public var uploadBlurFaces: Bool?
    /// The window a mark gets when its maker names none (`fieldcap mark`): seconds before and after.
    public var markBefore: Double?
    public var markAfter: Double?
    /// GPIO lines that mark the recording, as `--mark-gpio` takes them.
    public var markGPIO: [String] = []
    public var devices: [DeviceSpec]

    static let topKeys = [
        "host_id", "output", "min_free", "sync_every", "duration", "segment", "max_storage", "keep", "intrinsics",
        "preview_blur_faces", "upload_blur_faces", "mark_before", "mark_after", "mark_gpio", "cameras", "imus",
        "sensors",
    ]

    /// Reads and checks `path`. Devices are not opened.
    public static func load(path: String) throws(RigConfigError) -> RigConfig {
        let name = path
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDirectory = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            throw RigConfigError(
                "\(name): "
                    + (!exists
                        ? "no such file; write one (see `fieldcap check --help` for an example)"
                        : isDirectory
                            ? "is a directory; give the config file" : "cannot be read (permission denied?)"))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw RigConfigError("\(name): is not UTF-8 text")
        }
        return try parse(text, name: name)
    }

    /// Parses config text; `name` is how errors name the file.
    public static func parse(_ text: String, name: String) throws(RigConfigError) -> RigConfig {
        let root: YAMLNode?
        do throws(YAMLError) {
            root = try YAMLDocument.parse(text)
        } catch {
            throw RigConfigError(syntax: error, name: name)
        }
        var config = RigConfig(path: name, devices: [])
        guard let root else { throw RigConfigError("\(name): is empty; describe at least one camera or IMU") }
        let top = try Entry(root, name: name, what: "the config", keys: topKeys)
        config.hostId = try top.text("host_id")
        config.output = try top.text("output")
        config.minFree = try top.value("min_free", example: "2G") { ByteSize($0) }
        config.intrinsics = try top.text("intrinsics")
        config.syncEvery = try top.value("sync_every", example: "1s") { TimeSpan($0) }
        config.duration = try top.value("duration", example: "10m") { TimeSpan($0) }
        config.segment = try top.value("segment", example: "30s") { TimeSpan($0) }
        config.maxStorage = try top.value("max_storage", example: "16G") { ByteSize($0) }
        config.keep = try top.value("keep", example: "2h") { TimeSpan($0) }
        config.previewBlurFaces = try top.value("preview_blur_faces", example: "true") {
            ["true": true, "false": false][$0]
        }
        config.uploadBlurFaces = try top.value("upload_blur_faces", example: "true") {
            ["true": true, "false": false][$0]
        }
        // A mark's window may be 0 on one side: only what came after, or before.
        func window(_ text: String) -> Double? {
            ["0", "0s"].contains(text) ? 0 : TimeSpan(text, maximumSeconds: MarkRequest.maxWindowSeconds)?.seconds
        }
        config.markBefore = try top.value("mark_before", example: "30s", window)
        config.markAfter = try top.value("mark_after", example: "30s", window)
        if let text = try top.text("mark_gpio") { config.markGPIO = [text] }
        if config.segment == nil {
            for key in ["max_storage", "keep"] where top.fields[key] != nil {
                throw RigConfigError(
                    "\(name):\(top.line(of: key)): \(key) needs segment: old footage "
                        + "goes one finished segment at a time (add segment: 30s, for one)"
                )
            }
        }
        if config.maxStorage?.bytes == 0 {
            throw RigConfigError(
                "\(name):\(top.line(of: "max_storage")): max_storage 0 would "
                    + "keep nothing; give a size that holds a few segments (16G)"
            )
        }
        if let host = config.hostId, let problem = StreamID.problem(with: host) {
            throw RigConfigError(
                "\(name):\(top.line(of: "host_id")): host_id '\(host.printable)' cannot be used: \(problem)")
        }
        for (key, kind) in [("cameras", DeviceSpec.Kind.camera), ("imus", .imu), ("sensors", .sensor)] {
            guard let list = top.fields[key] else { continue }
            guard case .sequence(let items) = list.node.content else {
                throw RigConfigError(
                    "\(name):\(list.line): \(key) must be a list, one '- device: ...' entry per device")
            }
            for item in items {
                config.devices.append(try device(item, kind: kind, name: name))
            }
        }
        if config.devices.isEmpty {
            throw RigConfigError("\(name): no cameras, imus or sensors; describe at least one device")
        }
        return config
    }

    /// One `cameras:`, `imus:` or `sensors:` entry as a device spec, each option checked at its own line.
    private static func device(
        _ node: YAMLNode, kind: DeviceSpec.Kind, name: String
    ) throws(RigConfigError) -> DeviceSpec {
        let what = ["camera": "a camera", "imu": "an IMU", "sensor": "a sensor"][kind.entryName]!
        let optionKeys = DeviceSpec.keys(of: kind).sorted()
        let keys = ["device"] + optionKeys + (kind == .camera ? ["controls"] : [])
        let entry = try Entry(node, name: name, what: what, keys: keys)
        guard let device = try entry.text("device") else {
            let examples =
                switch kind {
                case .camera: "/dev/video0, /dev/v4l/by-id/..., synthetic"
                case .imu: "iio:device0, bmi160, synthetic"
                case .sensor: "feed:gripper"
                }
            throw RigConfigError("\(name):\(entry.line): \(what) needs 'device:' (e.g. \(examples))")
        }
        var spec = DeviceSpec(kind: kind, device: device, options: [:], origin: "\(name):\(entry.line(of: "device"))")
        var optionLines: [String: Int] = [:]
        for key in optionKeys {
            let value: String?
            if key == "channels", let field = entry.fields[key], case .sequence(let names) = field.node.content {
                value = try names.map { node throws(RigConfigError) in
                    guard let scalar = node.scalar else {
                        throw RigConfigError("\(name):\(field.line): channels must be a list of channel names")
                    }
                    return scalar
                }.joined(separator: "+")
            } else {
                value = try entry.text(key)
            }
            guard let value else { continue }
            spec.options[key] = value
            optionLines[key] = entry.line(of: key)
        }
        if let field = entry.fields["controls"] {
            let controls = try Entry(field.node, name: name, what: "controls", keys: nil)
            for (control, _) in controls.fields {
                spec.options["ctrl.\(control)"] = try controls.text(control)
                optionLines["ctrl.\(control)"] = controls.line(of: control)
            }
        }
        // Each option alone, so the error names the line it is on; then the whole entry (the
        // device's short form may carry options too).
        for (key, line) in optionLines.sorted(by: { $0.value < $1.value }) {
            let alone = DeviceSpec(
                kind: kind, device: device, options: [key: spec.options[key]!], origin: "\(name):\(line)")
            do throws(PlanError) { try DevicePlan(specs: [alone]).factory(for: alone).check(alone) } catch {
                throw RigConfigError(error.message)
            }
        }
        do throws(PlanError) { try DevicePlan(specs: [spec]).factory(for: spec).check(spec) } catch {
            throw RigConfigError(error.message)
        }
        return spec
    }
}

/// A config problem: one line that names the file and the line.
public struct RigConfigError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(_ message: String) { self.message = message }

    init(syntax error: YAMLError, name: String) {
        switch error {
        case .duplicateKeys(let keys, let line):
            message =
                "\(name):\(line): \(keys.map { "'\($0.printable)'" }.joined(separator: ", ")) "
                + "given twice in the same block"
        default:
            message = "\(name):\(error.line): not valid YAML: \(error.problem)"
        }
    }
}

/// A YAML mapping whose keys are checked against the ones allowed, with each value's line.
private struct Entry {
    struct Field {
        var node: YAMLNode
        var line: Int
    }
    var fields: [String: Field] = [:]
    var line: Int
    var name: String
    var what: String

    init(_ node: YAMLNode, name: String, what: String, keys: [String]?) throws(RigConfigError) {
        self.name = name
        self.what = what
        line = node.line
        guard case .mapping(let mapping) = node.content else {
            throw RigConfigError("\(name):\(line): \(what) must be a block of 'key: value' lines")
        }
        for entry in mapping {
            let keyLine = entry.key.line
            guard let key = entry.key.scalar else {
                throw RigConfigError("\(name):\(keyLine): a key in \(what) must be a plain name")
            }
            if let keys, !keys.contains(key) {
                let near = keys.map { ($0, editDistance($0, key.lowercased())) }.filter { $0.1 <= 2 }.min {
                    $0.1 < $1.1
                }?.0
                throw RigConfigError(
                    "\(name):\(keyLine): unknown key '\(key.printable)' in "
                        + "\(what)\(near.map { "; did you mean '\($0)'?" } ?? ""); "
                        + "keys: \(keys.joined(separator: ", "))"
                )
            }
            fields[key] = Field(node: entry.value, line: keyLine)
        }
    }

    func line(of key: String) -> Int { fields[key]?.line ?? line }

    /// A scalar value as text, or nil when the key is absent.
    func text(_ key: String) throws(RigConfigError) -> String? {
        guard let field = fields[key] else { return nil }
        guard let text = field.node.scalar, !text.isEmpty else {
            throw RigConfigError("\(name):\(field.line): \(key) in \(what) must be a single value")
        }
        return text
    }

    func value<T>(_ key: String, example: String, _ parse: (String) -> T?) throws(RigConfigError) -> T? {
        guard let text = try text(key) else { return nil }
        guard let value = parse(text) else {
            throw RigConfigError(
                "\(name):\(line(of: key)): \(key) '\(text.printable)' is not valid; e.g. \(key): \(example)")
        }
        return value
    }
}

/// How many single-character edits turn `a` into `b` (for "did you mean").
private func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a), b = Array(b)
    var row = Array(0...b.count)
    for i in 1...max(a.count, 1) where !a.isEmpty {
        var previous = row[0]
        row[0] = i
        for j in stride(from: 1, through: b.count, by: 1) {
            let current = row[j]
            row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
            previous = current
        }
    }
    return a.isEmpty ? b.count : row[b.count]
}
