import FieldcapCore

/// The CDR payloads of the messages an MCAP export writes, field by field in the order
/// `ROS2Schema` gives them.
enum ROS2Messages {
    /// `std_msgs/Header`: a stamp in nanoseconds since the epoch, and the frame it is in.
    struct Header {
        var stampNs: UInt64
        var frameId: String

        func write(_ cdr: inout CDRWriter) {
            cdr.i32(Int32(truncatingIfNeeded: stampNs / 1_000_000_000))
            cdr.u32(UInt32(stampNs % 1_000_000_000))
            cdr.string(frameId)
        }
    }

    /// `sensor_msgs/Image`: rows of `step` bytes, as the camera gave them.
    static func image(
        _ header: Header, height: Int, width: Int, encoding: String, step: Int, data: UnsafeRawBufferPointer,
        into buffer: inout [UInt8]
    ) {
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.u32(UInt32(height))
            cdr.u32(UInt32(width))
            cdr.string(encoding)
            cdr.u8(0)  // little-endian, as V4L2's 16-bit formats are
            cdr.u32(UInt32(step))
            cdr.byteSequence(data)
        }
    }

    /// `sensor_msgs/CompressedImage` (`format` "jpeg").
    static func compressedImage(
        _ header: Header, format: String, data: UnsafeRawBufferPointer, into buffer: inout [UInt8]
    ) {
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.string(format)
            cdr.byteSequence(data)
        }
    }

    /// `sensor_msgs/Imu` with no orientation (its covariance's first element -1, as the message's
    /// definition asks of an IMU that does not estimate one). A vector the IMU does not measure
    /// is marked the same way; an axis it lacks of one it does is NaN.
    static func imu(
        _ header: Header, angularVelocity: [Double]?, linearAcceleration: [Double]?, into buffer: inout [UInt8]
    ) {
        let unknown = [-1.0] + [Double](repeating: 0, count: 8)
        let zero = [Double](repeating: 0, count: 9)
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.f64Array([0, 0, 0, 1])
            cdr.f64Array(unknown)
            cdr.f64Array(angularVelocity ?? [0, 0, 0])
            cdr.f64Array(angularVelocity == nil ? unknown : zero)
            cdr.f64Array(linearAcceleration ?? [0, 0, 0])
            cdr.f64Array(linearAcceleration == nil ? unknown : zero)
        }
    }

    /// `sensor_msgs/NavSatFix` from a fix as gpsd reported it (`TPV`): no fix (mode below 2) is
    /// `STATUS_NO_FIX` with NaN position; DGPS and RTK (gpsd's status 2 to 4) are ground-based
    /// augmentation; the altitude is above the WGS 84 ellipsoid (gpsd's `altHAE`, NaN without
    /// it); the covariance is diagonal, east, north and up (`epx`², `epy`², `epv`², gpsd's 95%
    /// errors), known when gpsd gave all three.
    static func navSatFix(_ header: Header, gpsd fix: JSONValue, into buffer: inout [UInt8]) {
        let mode = fix["mode"]?.intValue ?? 0
        let status: Int8 = mode < 2 ? -1 : ((2...4).contains(fix["status"]?.intValue ?? 1) ? 2 : 0)
        let errors = ["epx", "epy", "epv"].compactMap { fix[$0]?.doubleValue }
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.u8(UInt8(bitPattern: status))
            cdr.u16(1)  // SERVICE_GPS: gpsd's TPV does not say which constellations
            cdr.f64(mode < 2 ? .nan : fix["lat"]?.doubleValue ?? .nan)
            cdr.f64(mode < 2 ? .nan : fix["lon"]?.doubleValue ?? .nan)
            cdr.f64(mode < 3 ? .nan : fix["altHAE"]?.doubleValue ?? .nan)
            if errors.count == 3 {
                cdr.f64Array([errors[0] * errors[0], 0, 0, 0, errors[1] * errors[1], 0, 0, 0, errors[2] * errors[2]])
                cdr.u8(2)  // COVARIANCE_TYPE_DIAGONAL_KNOWN
            } else {
                cdr.f64Array([Double](repeating: 0, count: 9))
                cdr.u8(0)  // COVARIANCE_TYPE_UNKNOWN
            }
        }
    }

    /// `fieldcap_msgs/SensorChannels`: names and values side by side (NaN where a line had no
    /// number).
    static func sensorChannels(_ header: Header, names: [String], values: [Double], into buffer: inout [UInt8]) {
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.stringSequence(names)
            cdr.f64Sequence(values)
        }
    }

    /// `sensor_msgs/CameraInfo` from a camera's calibration: `k` row-major 3x3, `d` in the
    /// order its `distortionModel` defines, `r` identity and `p` = [K | 0] (an unrectified
    /// monocular camera).
    static func cameraInfo(
        _ header: Header, height: Int, width: Int, distortionModel: String, d: [Double], k: [Double],
        into buffer: inout [UInt8]
    ) {
        CDRWriter.append(to: &buffer) { cdr in
            header.write(&cdr)
            cdr.u32(UInt32(height))
            cdr.u32(UInt32(width))
            cdr.string(distortionModel)
            cdr.f64Sequence(d)
            cdr.f64Array(k)
            cdr.f64Array([1, 0, 0, 0, 1, 0, 0, 0, 1])
            cdr.f64Array([k[0], k[1], k[2], 0, k[3], k[4], k[5], 0, k[6], k[7], k[8], 0])
            cdr.u32(0)
            cdr.u32(0)
            cdr.u32(0)  // roi: all zero, the full image
            cdr.u32(0)
            cdr.u32(0)
            cdr.u32(0)
            cdr.bool(false)
        }
    }
}
