/// The ROS 2 message types an MCAP export carries, as `ros2msg` schemas: the type's `.msg`
/// definition, then each type it uses after a line of 80 `=` and `MSG: pkg/Type`, as rosbag2
/// writes them (comments and constants left out: readers need the fields only). The field lists
/// are ROS 2's own (sensor_msgs, std_msgs, geometry_msgs, builtin_interfaces of Humble and later).
public enum ROS2Schema: String, CaseIterable, Sendable {
    case image = "sensor_msgs/msg/Image"
    case compressedImage = "sensor_msgs/msg/CompressedImage"
    case cameraInfo = "sensor_msgs/msg/CameraInfo"
    case imu = "sensor_msgs/msg/Imu"
    case navSatFix = "sensor_msgs/msg/NavSatFix"
    /// fieldcap's own, for a sensor stream's channels that no ROS message has a field for
    /// (an IMU's magnetometer and temperature, an ADC's voltages): a header, and one name and
    /// one value per channel, in the stream's order.
    case sensorChannels = "fieldcap_msgs/msg/SensorChannels"

    /// The schema's `data`.
    public var text: String {
        var text = Self.definitions[self.rawValue]!
        for dependency in dependencies {
            let parts = dependency.split(separator: "/")
            let shortName = "\(parts[0])/\(parts[parts.count - 1])"
            text += String(repeating: "=", count: 80) + "\nMSG: \(shortName)\n"
            text += Self.definitions[dependency]!
        }
        return text
    }

    /// Every type the message uses, depth first, each once.
    var dependencies: [String] {
        var seen: [String] = []
        func visit(_ type: String) {
            for line in Self.definitions[type]!.split(separator: "\n") {
                let fieldType = String(line.split(separator: " ")[0]).replacingBrackets
                guard fieldType.contains("/") else { continue }
                let full = fieldType.fullTypeName
                guard !seen.contains(full) else { continue }
                seen.append(full)
                visit(full)
            }
        }
        visit(rawValue)
        return seen
    }

    static let definitions: [String: String] = [
        "builtin_interfaces/msg/Time": "int32 sec\nuint32 nanosec\n",
        "std_msgs/msg/Header": "builtin_interfaces/Time stamp\nstring frame_id\n",
        "geometry_msgs/msg/Quaternion": "float64 x 0\nfloat64 y 0\nfloat64 z 0\nfloat64 w 1\n",
        "geometry_msgs/msg/Vector3": "float64 x\nfloat64 y\nfloat64 z\n",
        "sensor_msgs/msg/RegionOfInterest":
            "uint32 x_offset\nuint32 y_offset\nuint32 height\nuint32 width\nbool do_rectify\n",
        "sensor_msgs/msg/Image":
            "std_msgs/Header header\nuint32 height\nuint32 width\n"
            + "string encoding\nuint8 is_bigendian\nuint32 step\nuint8[] data\n",
        "sensor_msgs/msg/CompressedImage": "std_msgs/Header header\nstring format\nuint8[] data\n",
        "sensor_msgs/msg/CameraInfo":
            "std_msgs/Header header\nuint32 height\nuint32 width\nstring distortion_model\nfloat64[] d\nfloat64[9] k\n"
            + "float64[9] r\nfloat64[12] p\nuint32 binning_x\nuint32 binning_y\nsensor_msgs/RegionOfInterest roi\n",
        "sensor_msgs/msg/Imu":
            "std_msgs/Header header\ngeometry_msgs/Quaternion orientation\nfloat64[9] orientation_covariance\n"
            + "geometry_msgs/Vector3 angular_velocity\nfloat64[9] angular_velocity_covariance\n"
            + "geometry_msgs/Vector3 linear_acceleration\nfloat64[9] linear_acceleration_covariance\n",
        "sensor_msgs/msg/NavSatFix":
            "std_msgs/Header header\nsensor_msgs/NavSatStatus status\nfloat64 latitude\nfloat64 longitude\n"
            + "float64 altitude\nfloat64[9] position_covariance\nuint8 position_covariance_type\n",
        "sensor_msgs/msg/NavSatStatus": "int8 status\nuint16 service\n",
        "fieldcap_msgs/msg/SensorChannels": "std_msgs/Header header\nstring[] names\nfloat64[] values\n",
    ]
}

extension String {
    /// `float64[9]` → `float64`, `uint8[]` → `uint8`.
    fileprivate var replacingBrackets: String {
        if let bracket = firstIndex(of: "[") { return String(self[..<bracket]) }
        return self
    }

    /// `std_msgs/Header` → `std_msgs/msg/Header`.
    fileprivate var fullTypeName: String {
        let parts = split(separator: "/")
        return parts.count == 2 ? "\(parts[0])/msg/\(parts[1])" : self
    }
}
