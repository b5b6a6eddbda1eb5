/// Which of a sensor stream's channels are an IMU's accelerometer and gyroscope axes: the IIO
/// names (`accel_x`, `anglvel_x`) and the synthetic IMU's (`gyro_x`). fieldcap records both in
/// SI units (m/s², rad/s), as `sensor_msgs/Imu` and EuRoC want them. The rest are `others`.
package struct IMULayout {
    /// Channel positions of x, y, z (nil for an axis the stream lacks).
    let accel: [Int?]
    package let gyro: [Int?]
    /// Positions of every channel that is neither, and their names.
    let others: [Int]
    let otherNames: [String]

    package init(channels: [String]) {
        func axes(_ prefixes: [String]) -> [Int?] {
            ["x", "y", "z"].map { axis in
                prefixes.lazy.compactMap { channels.firstIndex(of: "\($0)_\(axis)") }.first
            }
        }
        accel = axes(["accel"])
        gyro = axes(["anglvel", "gyro"])
        let used = Set((accel + gyro).compactMap { $0 })
        others = channels.indices.filter { !used.contains($0) }
        otherNames = others.map { channels[$0] }
    }

    var hasAccelerometer: Bool { accel.contains { $0 != nil } }
    package var hasGyroscope: Bool { gyro.contains { $0 != nil } }
    var isIMU: Bool { hasAccelerometer || hasGyroscope }

    /// x, y, z in m/s² (NaN for an axis the stream lacks); nil without an accelerometer.
    func accelerometer(_ values: [Double?]) -> [Double]? {
        hasAccelerometer ? accel.map { $0.flatMap { values[$0] } ?? .nan } : nil
    }

    /// x, y, z in rad/s; nil without a gyroscope.
    package func gyroscope(_ values: [Double?]) -> [Double]? {
        hasGyroscope ? gyro.map { $0.flatMap { values[$0] } ?? .nan } : nil
    }
}
