import FieldcapCalibration
import FieldcapCore
import FieldcapOutput
import FieldcapSystem
import FoundationEssentials
import SyncField

/// `--intrinsics FILE[,match=id|order]`, or the rig config's `intrinsics:` with the same value: a
/// calibration file (a Kalibr camchain, an OpenCV or ROS calibration YAML) and how its cameras
/// are matched to the recorded ones: by id (Kalibr's `cam0` is the stream `cam0`, fieldcap's
/// default id of the first camera; the default) or by order (the file's first camera is the
/// first `--cam`). The file is read when the settings are resolved, before a device is opened;
/// it is matched to the cameras once they are open and their sizes granted.
public struct IntrinsicsSetting: Sendable {
    public var file: CalibrationFile
    public var match: CalibrationMatch
    /// How errors name the setting: `--intrinsics`, or `intrinsics (rig.yaml)`.
    public var name: String

    /// Reads `text` (`FILE` or `FILE,match=order`); a relative FILE is taken from `directory`
    /// when given (a rig config's own), else from the working directory.
    public static func parse(
        _ text: String, name: String, directory: String? = nil
    ) throws(PlanError)
        -> IntrinsicsSetting
    {
        var path = text
        var match = CalibrationMatch.id
        if let comma = text.lastIndex(of: ","), text[comma...].hasPrefix(",match=") {
            path = String(text[..<comma])
            let value = String(text[text.index(comma, offsetBy: 7)...])
            guard let parsed = CalibrationMatch(rawValue: value) else {
                throw PlanError(
                    "\(name) \(text.printable): match=\(value.printable) is not id or order (id: the "
                        + "file's camera names are stream ids; order: the file's cameras in --cam order)"
                )
            }
            match = parsed
        }
        guard !path.isEmpty else {
            throw PlanError("\(name): give a calibration file (a Kalibr camchain or an OpenCV calibration YAML)")
        }
        if let directory, !path.hasPrefix("/") {
            path = directory.hasSuffix("/") ? directory + path : "\(directory)/\(path)"
        }
        do throws(CalibrationError) {
            return IntrinsicsSetting(file: try CalibrationFile.read(path: path), match: match, name: name)
        } catch {
            throw PlanError("\(name): \(error.message)")
        }
    }

    /// The file's cameras matched to `sources`' granted sizes.
    public func assign(to sources: [CaptureSource]) throws(PlanError) -> SessionCalibration {
        let cameras = sources.compactMap { source in
            source.descriptor.videoFormat.map {
                RecordedCamera(id: source.descriptor.id, width: $0.width, height: $0.height)
            }
        }
        do throws(CalibrationError) {
            return SessionCalibration(file: file, match: match, cameras: try file.assign(to: cameras, by: match))
        } catch {
            throw PlanError("\(name): \(error.message)")
        }
    }
}

extension RigConfig {
    /// The config's `intrinsics:` read, a relative file taken from the config's own directory;
    /// nil when it has none.
    public func intrinsicsSetting() throws(PlanError) -> IntrinsicsSetting? {
        guard let intrinsics else { return nil }
        let directory = path.contains("/") ? PathName.directory(of: path) : nil
        return try IntrinsicsSetting.parse(intrinsics, name: "intrinsics (\(path))", directory: directory)
    }
}

/// A recording's calibration: the file, copied into each session unchanged, and each camera's
/// parsed values, in the sidecar beside the camera's format (`streams[].calibration`).
public struct SessionCalibration: Sendable {
    public var file: CalibrationFile
    public var match: CalibrationMatch
    /// By stream id.
    public var cameras: [String: CameraCalibration]

    /// The copy's name in the session, whatever the file's own (kept in the sidecar as `source`):
    /// one name to look for, never one of the session's own files.
    public static let fileName = "calibration.yaml"

    /// The sidecar's `calibration_file`: where the values came from.
    var sidecarEntry: [String: JSONValue] {
        [
            "file": .string(Self.fileName), "format": .string(file.kind.rawValue), "match": .string(match.rawValue),
            "source": .string(file.path),
        ]
    }

    /// Copies the file into `directory` byte for byte (and syncs it: a session's files are on
    /// disk before its sidecar names them).
    public func install(in directory: String) throws {
        guard let bytes = FileManager.default.contents(atPath: file.path) else {
            throw SessionDirectoryError(message: "\(file.path) cannot be read any more: the calibration is not kept")
        }
        try AtomicFile.write(Array(bytes), to: "\(directory)/\(Self.fileName)")
    }
}
