/// How a calibration file's cameras are paired with the recorded camera streams.
public enum CalibrationMatch: String, Sendable, CaseIterable {
    /// The file's camera named `cam0` calibrates the stream whose id is `cam0` (Kalibr's names
    /// and fieldcap's default ids agree: the first camera is cam0 in both).
    case id
    /// The file's first camera calibrates the first recorded camera, and so on: for files
    /// whose cameras have no name (OpenCV) or another one (ROS's camera_name).
    case order
}

/// A camera stream as recorded: its id and the size the device granted.
public struct RecordedCamera: Sendable, Equatable {
    public var id: String
    public var width: Int
    public var height: Int

    public init(id: String, width: Int, height: Int) {
        self.id = id
        self.width = width
        self.height = height
    }
}

extension CalibrationFile {
    /// The file's cameras keyed by the id of the recorded stream each calibrates. A recorded
    /// camera the file does not calibrate is left out; a file camera that finds no recorded
    /// camera is an error, as is a calibration at another size than the recording's, since
    /// intrinsics in pixels hold only at the size they were estimated at.
    public func assign(
        to cameras: [RecordedCamera], by match: CalibrationMatch
    ) throws(CalibrationError)
        -> [String: CameraCalibration]
    {
        let recordedIDs = cameras.isEmpty ? "none" : cameras.map(\.id).joined(separator: ", ")
        var assigned: [String: CameraCalibration] = [:]
        switch match {
        case .id:
            for calibration in self.cameras {
                guard let name = calibration.name else {
                    throw CalibrationError(
                        "\(path): its camera has no name to match a camera id by: use match=order")
                }
                guard let recorded = cameras.first(where: { $0.id == name }) else {
                    throw CalibrationError(
                        "\(path): \(name) is not a recorded camera (recorded: \(recordedIDs)):"
                            + " give the camera the id \(name), or use match=order")
                }
                try check(calibration, against: recorded)
                assigned[recorded.id] = calibration
            }
        case .order:
            guard self.cameras.count <= cameras.count else {
                let verb = cameras.count == 1 ? "is" : "are"
                throw CalibrationError(
                    "\(path): calibrates \(self.cameras.count) cameras, but \(cameras.count) \(verb) recorded"
                        + " (\(recordedIDs)): record every camera it calibrates, or give a file of these only")
            }
            for (calibration, recorded) in zip(self.cameras, cameras) {
                try check(calibration, against: recorded)
                assigned[recorded.id] = calibration
            }
        }
        return assigned
    }

    private func check(_ calibration: CameraCalibration, against recorded: RecordedCamera) throws(CalibrationError) {
        guard calibration.width != recorded.width || calibration.height != recorded.height else { return }
        let calibrated = "\(calibration.width)x\(calibration.height)"
        throw CalibrationError(
            "\(path): \(calibration.name ?? "its camera") is calibrated at \(calibrated), but \(recorded.id) records"
                + " \(recorded.width)x\(recorded.height): calibrate at the recorded size or record at \(calibrated)")
    }
}
