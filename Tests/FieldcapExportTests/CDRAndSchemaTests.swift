import Testing

@testable import FieldcapExport

@Suite("ROS 2 messages in CDR")
struct CDRAndSchemaTests {
    @Test("a header is the encapsulation, sec, nanosec and a NUL-terminated string, each aligned from the header's end")
    func headerBytes() {
        let bytes = CDRWriter.message { cdr in
            ROS2Messages.Header(stampNs: 1_700_000_001_000_000_005, frameId: "cam").write(&cdr)
            cdr.f64(1.5)  // after 4+4+4+4 bytes: 16, already 8-aligned
            cdr.u8(7)
            cdr.f64(2)  // 25 → padded to 32
        }
        let expected: [UInt8] =
            [0, 1, 0, 0]  // CDR little-endian
            + [0x01, 0xF1, 0x53, 0x65]  // 1_700_000_001 s
            + [5, 0, 0, 0]  // 5 ns
            + [4, 0, 0, 0] + Array("cam".utf8) + [0]
            + [0, 0, 0, 0, 0, 0, 0xF8, 0x3F]  // 1.5
            + [7] + [0, 0, 0, 0, 0, 0, 0]
            + [0, 0, 0, 0, 0, 0, 0, 0x40]  // 2.0
        #expect(bytes == expected)
    }

    @Test("a message appended to a buffer aligns from its own start, not the buffer's")
    func alignmentIsPerMessage() {
        var buffer: [UInt8] = [9, 9, 9]  // an MCAP record's header before the payload
        CDRWriter.append(to: &buffer) { $0.f64(1) }
        #expect(buffer.count == 3 + 4 + 8)
    }

    @Test("schemas carry each type they use once, after 80 '=' and 'MSG: pkg/Type'")
    func schemaText() {
        let text = ROS2Schema.imu.text
        #expect(text.hasPrefix("std_msgs/Header header\n"))
        let separators = text.components(separatedBy: String(repeating: "=", count: 80) + "\nMSG: ")
        #expect(separators.count == 5)  // Header, Time, Quaternion, Vector3
        #expect(text.contains("MSG: builtin_interfaces/Time\nint32 sec\nuint32 nanosec\n"))
        #expect(ROS2Schema.cameraInfo.text.contains("MSG: sensor_msgs/RegionOfInterest\n"))
        #expect(ROS2Schema.image.dependencies == ["std_msgs/msg/Header", "builtin_interfaces/msg/Time"])
    }

    @Test("IMU channels by IIO and synthetic names; the rest are other channels; a missing axis is NaN")
    func imuLayout() throws {
        let iio = IMULayout(channels: ["accel_x", "accel_y", "accel_z", "anglvel_x", "anglvel_y", "anglvel_z", "temp"])
        #expect(iio.isIMU && iio.otherNames == ["temp"])
        #expect(iio.gyroscope([1, 2, 3, 4, 5, 6, 7]) == [4, 5, 6])
        let dummy = IMULayout(channels: ["voltage0", "accel_x"])
        #expect(dummy.hasAccelerometer && !dummy.hasGyroscope && dummy.otherNames == ["voltage0"])
        let accel = try #require(dummy.accelerometer([0.5, 9.8]))
        #expect(accel[0] == 9.8 && accel[1].isNaN && accel[2].isNaN)
        #expect(dummy.gyroscope([0.5, 9.8]) == nil)
        #expect(!IMULayout(channels: ["voltage0"]).isIMU)
    }

    @Test("stream ids become ROS names")
    func topicNames() {
        #expect(MCAPExport.topicName("cam_left") == "cam_left")
        #expect(MCAPExport.topicName("cam-left.0") == "cam_left_0")
        #expect(MCAPExport.topicName("0cam") == "_0cam")
    }
}

@Suite("EuRoC's YAML numbers")
struct EuRoCNumberTests {
    @Test("exponents get the dot YAML 1.1 needs to read them as numbers; whole numbers stay integers")
    func yaml11Floats() {
        #expect(EuRoCExport.number(-4e-05) == "-4.0e-05")
        #expect(EuRoCExport.number(1.5e-07) == "1.5e-07")
        #expect(EuRoCExport.number(0.25) == "0.25")
        #expect(EuRoCExport.number(30) == "30")
    }
}
