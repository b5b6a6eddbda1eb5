/// One camera's calibration, as a session keeps it: a pinhole camera matrix, its lens
/// distortion, the resolution it was calibrated at, and where it sits relative to the IMU.
public struct CameraCalibration: Sendable, Equatable {
    /// How the distortion coefficients are to be read.
    public enum DistortionModel: String, Sendable {
        /// Radial-tangential (Kalibr `radtan`, OpenCV's k1 k2 p1 p2 [k3]).
        case radialTangential = "radtan"
        /// Kannala-Brandt fisheye (Kalibr `equidistant`, OpenCV fisheye k1..k4).
        case equidistant
        /// No distortion.
        case none
    }

    /// The camera's name in the calibration file (`cam0`), when it has one.
    public var name: String?
    public var width: Int
    public var height: Int
    /// fx, fy, cx, cy.
    public var fx: Double
    public var fy: Double
    public var cx: Double
    public var cy: Double
    public var distortionModel: DistortionModel
    public var distortion: [Double]
    /// Camera from IMU, row-major 4x4 (Kalibr `T_cam_imu`), when the file gives it.
    public var cameraFromIMU: [Double]?
    /// Seconds to add to the camera's times to get the IMU's (Kalibr `timeshift_cam_imu`).
    public var timeshiftCamIMU: Double?

    public init(
        name: String?, width: Int, height: Int, fx: Double, fy: Double, cx: Double, cy: Double,
        distortionModel: DistortionModel, distortion: [Double], cameraFromIMU: [Double]? = nil,
        timeshiftCamIMU: Double? = nil
    ) {
        self.name = name
        self.width = width
        self.height = height
        self.fx = fx
        self.fy = fy
        self.cx = cx
        self.cy = cy
        self.distortionModel = distortionModel
        self.distortion = distortion
        self.cameraFromIMU = cameraFromIMU
        self.timeshiftCamIMU = timeshiftCamIMU
    }

    /// K, row-major 3x3.
    public var cameraMatrix: [Double] { [fx, 0, cx, 0, fy, cy, 0, 0, 1] }

    /// ROS's `distortion_model` name (`plumb_bob` for five radial-tangential coefficients,
    /// `rational_polynomial` for eight, `equidistant` for fisheye).
    public var rosDistortionModel: String {
        switch distortionModel {
        case .radialTangential: distortion.count > 5 ? "rational_polynomial" : "plumb_bob"
        case .equidistant: "equidistant"
        case .none: "plumb_bob"
        }
    }

    /// The coefficients as ROS's `d` reads them: plumb_bob takes five (k1 k2 p1 p2 k3), so
    /// Kalibr's four get k3 = 0.
    public var rosDistortion: [Double] {
        switch distortionModel {
        case .radialTangential: distortion.count == 4 ? distortion + [0] : distortion
        case .equidistant: distortion
        case .none: [0, 0, 0, 0, 0]
        }
    }
}
