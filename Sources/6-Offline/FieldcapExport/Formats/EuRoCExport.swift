import FieldcapCalibration
import FieldcapCore
import FieldcapFaces
import FoundationEssentials
import Glibc

/// `fieldcap export --format euroc`: the ASL/EuRoC folder ORB-SLAM3, Basalt, VINS-Fusion and
/// Kalibr's bag maker read:
///
///     mav0/cam0/data/<t_ns>.png   mav0/cam0/data.csv   mav0/cam0/sensor.yaml
///     mav0/imu0/data.csv          mav0/imu0/sensor.yaml   mav0/imu0.csv (Kalibr's name)
///     mav0/depth0/data/<t_ns>.png ...                   times.txt (cam0's, ORB-SLAM3's)
///
/// Times are UTC nanoseconds through the sync point, as EuRoC's own are. Cameras are cam0,
/// cam1, ... in the session's order; 16-bit depth cameras depth0, ...; IMUs imu0, .... Images
/// are trimmed to imu0's span, as ORB-SLAM3 wants the IMU before the first image and after the
/// last. Sensor channels that are not an IMU's have no place in the layout and are left out
/// (said in the outcome).
enum EuRoCExport {
    struct Options {
        /// RGB PNGs instead of grey (EuRoC's cameras are grey, and most VI-SLAM systems read grey).
        var colour = false
        var depthStreams: Set<String> = []
        var faces: FaceCover.Settings?
    }

    static func write(
        session: ExportSession, streams: [ExportSession.Stream], directory: String, options: Options,
        calibration: [String: CameraCalibration], progress: (Int) -> Void, isCancelled: () -> Bool
    ) throws(ExportError) -> [String] {
        let root = "\(directory)/mav0"
        try makeDirectory(directory)
        try makeDirectory(root)
        var lines: [String] = []

        var span: ClosedRange<UInt64>?
        var imuNumber = 0
        for stream in streams where !stream.isCamera {
            if stream.recordedNothing {
                lines.append("\(stream.id): left out (it recorded nothing)")
                continue
            }
            let reader = try SensorReader(session: session, stream: stream)
            let layout = IMULayout(channels: reader.channels)
            guard layout.isIMU else {
                lines.append(
                    "\(stream.id): left out (channels \(reader.channels.joined(separator: ", ")) are not an IMU's)")
                continue
            }
            let name = "imu\(imuNumber)"
            imuNumber += 1
            let (count, times) = try writeIMU(reader, layout: layout, session: session, folder: "\(root)/\(name)")
            if link("\(root)/\(name)/data.csv", "\(root)/\(name).csv") != 0 {
                throw .io("link", path: "\(root)/\(name).csv", errno: errno)
            }
            try ExportFile.write(
                Array(imuYAML(stream: stream, layout: layout).utf8), to: "\(root)/\(name)/sensor.yaml")
            if span == nil { span = times }
            lines.append("\(stream.id) -> mav0/\(name): \(count) samples")
        }

        var cameraNumber = 0, depthNumber = 0, written = 0
        for stream in streams where stream.isCamera {
            let format = stream.format!
            let isDepth = stream.holdsDepth(options.depthStreams)
            let name: String
            if isDepth {
                name = "depth\(depthNumber)"
                depthNumber += 1
            } else {
                name = "cam\(cameraNumber)"
                cameraNumber += 1
            }
            let layout: FramePixels.Layout =
                isDepth ? .grey16 : options.colour ? .rgb8 : .grey8
            if options.colour, let problem = PixelConverter.problem(layout, from: format) {
                throw ExportError(.request, "--colour: \(stream.id) is \(format): \(problem)")
            }
            let folder = "\(root)/\(name)"
            try makeDirectory(folder)
            try makeDirectory("\(folder)/data")
            let encoders = try FrameEncoders<[UInt8]> { () throws(ExportError) in
                let converter = try PixelConverter(format: format, layout: layout)
                return { frame throws(ExportError) in try PNGEncoder.encode(try converter.pixels(frame)) }
            }
            let csv = try ExportFile(creating: "\(folder)/data.csv")
            try csv.write(Array("#timestamp [ns],filename\n".utf8))
            let times = name == "cam0" ? try ExportFile(creating: "\(directory)/times.txt") : nil
            let reader = try CameraReader(
                session: session, stream: stream, coveringFaces: isDepth ? nil : options.faces)
            defer { reader.cancel() }
            var count = 0, trimmed = 0
            var batch: [(ns: UInt64, bytes: [UInt8])] = []
            // Each frame's covered boxes, for a reviewer: the time, then x y width height of each.
            let faceLines =
                options.faces != nil && !isDepth
                ? try ExportFile(creating: "\(folder)/faces_covered.csv") : nil
            try faceLines?.write(Array("#timestamp [ns],boxes (x y width height, pixels)\n".utf8))
            func flush() throws(ExportError) {
                let files = try encoders.encode(batch.map(\.bytes))
                for (frame, png) in zip(batch, files) {
                    try ExportFile.write(png, to: "\(folder)/data/\(frame.ns).png")
                    try csv.write(Array("\(frame.ns),\(frame.ns).png\n".utf8))
                    try times?.write(Array("\(frame.ns)\n".utf8))
                }
                count += batch.count
                written += batch.count
                progress(written)
                batch.removeAll(keepingCapacity: true)
            }
            while let frame = try reader.next() {
                if isCancelled() { throw ExportError(.cancelled, "stopped: nothing written") }
                let ns = session.wallClockNs(captureNs: frame.captureNs)
                if let span, !span.contains(ns) {
                    trimmed += 1
                    written += 1
                    continue
                }
                if let faceLines, let covered = frame.facesCovered {
                    let boxes = covered.map { box in
                        [box.x, box.y, box.width, box.height].map { String(Int($0.rounded())) }.joined(separator: " ")
                    }
                    try faceLines.write(Array("\(ns),\(boxes.joined(separator: ";"))\n".utf8))
                }
                batch.append((ns, frame.bytes))
                if batch.count == encoders.workers * 2 { try flush() }
            }
            try flush()
            try csv.finish()
            try times?.finish()
            try faceLines?.finish()
            try ExportFile.write(
                Array(cameraYAML(stream: stream, format: format, calibration: calibration[stream.id]).utf8),
                to: "\(folder)/sensor.yaml")
            let outside = trimmed > 0 ? ", \(trimmed) outside imu0's span left out" : ""
            let kind = layout == .grey16 ? "16-bit" : layout == .rgb8 ? "RGB" : "grey"
            lines.append("\(stream.id) -> mav0/\(name): \(count) \(kind) PNGs\(outside)")
            if let faces = reader.facesReport {
                try ExportFile.write(Array((faces.json + "\n").utf8), to: "\(folder)/faces_covered.json")
                lines.append("\(stream.id): \(faces.summary) (mav0/\(name)/faces_covered.json)")
            }
        }
        return lines
    }

    /// The IMU's `data.csv`: gyro first, then accel, as EuRoC orders them; an axis the IMU
    /// lacks is empty. Returns the sample count and the span of their times.
    private static func writeIMU(
        _ reader: SensorReader, layout: IMULayout, session: ExportSession, folder: String
    ) throws(ExportError) -> (Int, ClosedRange<UInt64>?) {
        try makeDirectory(folder)
        let csv = try ExportFile(creating: "\(folder)/data.csv")
        try csv.write(
            Array(
                ("#timestamp [ns],w_RS_S_x [rad s^-1],w_RS_S_y [rad s^-1],w_RS_S_z [rad s^-1],"
                    + "a_RS_S_x [m s^-2],a_RS_S_y [m s^-2],a_RS_S_z [m s^-2]\n").utf8))
        var count = 0
        var first: UInt64?, last: UInt64 = 0
        while let sample = try reader.next() {
            let ns = session.wallClockNs(captureNs: sample.captureNs)
            first = first ?? ns
            last = ns
            var line = String(ns)
            for axis in layout.gyro + layout.accel {
                line += ","
                if let axis, let value = sample.values[axis], value.isFinite { line += "\(value)" }
            }
            line += "\n"
            try csv.write(Array(line.utf8))
            count += 1
        }
        try csv.finish()
        return (count, first.map { $0...last })
    }

    /// EuRoC's `sensor.yaml` of a camera: the pinhole intrinsics and radial-tangential
    /// distortion when the session keeps a calibration, `T_BS` (camera in the IMU's frame,
    /// Kalibr's `T_cam_imu` inverted) when it gives one, identity otherwise.
    static func cameraYAML(stream: ExportSession.Stream, format: VideoFormat, calibration: CameraCalibration?) -> String
    {
        var text = """
            # General sensor definitions.
            sensor_type: camera
            comment: fieldcap stream \(stream.id) (\(stream.device), \(format))

            # Sensor extrinsics wrt. the \
            body-frame.\(calibration?.cameraFromIMU == nil ? " Not calibrated: identity." : "")
            T_BS:
              cols: 4
              rows: 4
              data: \(numbers(calibration?.cameraFromIMU.map(rigidInverse) ?? identity))

            # Camera specific definitions.
            rate_hz: \(number(stream.nominalRate))
            resolution: [\(format.width), \(format.height)]

            """
        if let calibration {
            let model =
                switch calibration.distortionModel {
                case .radialTangential, .none: "radial-tangential"
                case .equidistant: "equidistant"
                }
            let coefficients =
                calibration.distortionModel == .none ? [0, 0, 0, 0] : calibration.distortion
            text += """
                camera_model: pinhole
                intrinsics: \(numbers([calibration.fx, calibration.fy, calibration.cx, calibration.cy])) #fu, fv, cu, cv
                distortion_model: \(model)
                distortion_coefficients: \(numbers(coefficients))

                """
        } else {
            text += """
                camera_model: pinhole
                # Not calibrated: record with --intrinsics FILE to have intrinsics and distortion here.

                """
        }
        return text
    }

    static func imuYAML(stream: ExportSession.Stream, layout: IMULayout) -> String {
        """
        # General sensor definitions.
        sensor_type: imu
        comment: fieldcap stream \(stream.id) (\(stream.device))

        # Sensor extrinsics wrt. the body-frame: the IMU is the body.
        T_BS:
          cols: 4
          rows: 4
          data: \(numbers(identity))
        rate_hz: \(number(stream.nominalRate))

        # Noise densities and random walks are the IMU's own: take them from its datasheet or an
        # Allan variance of a still recording (fieldcap does not know them).

        """
    }

    private static let identity: [Double] = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]

    /// The inverse of a row-major rigid transform: Rᵀ, -Rᵀt.
    static func rigidInverse(_ m: [Double]) -> [Double] {
        let r = [[m[0], m[1], m[2]], [m[4], m[5], m[6]], [m[8], m[9], m[10]]]
        let t = [m[3], m[7], m[11]]
        var out = identity
        for row in 0..<3 {
            for column in 0..<3 { out[row * 4 + column] = r[column][row] }
            out[row * 4 + 3] = -(0..<3).reduce(0.0) { $0 + r[$1][row] * t[$1] }
        }
        return out
    }

    /// A number as YAML 1.1 reads it (OpenCV's, PyYAML's and yaml-cpp's readers): an exponent
    /// needs a dot before it (`-4.0e-05`; `-4e-05` is a string there).
    static func number(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        let text = "\(value)"
        guard let exponent = text.firstIndex(of: "e"), !text[..<exponent].contains(".") else { return text }
        return text[..<exponent] + ".0" + text[exponent...]
    }

    private static func numbers(_ values: [Double]) -> String { "[" + values.map(number).joined(separator: ", ") + "]" }
}

func makeDirectory(_ path: String) throws(ExportError) {
    if mkdir(path, 0o755) != 0 { throw .io("mkdir", path: path, errno: errno) }
}

extension ExportSession.Stream {
    /// Whether a camera's frames are depth in millimetres: Z16 always, Y16 when `--depth` names it.
    func holdsDepth(_ depthStreams: Set<String>) -> Bool {
        format?.pixelFormat == .z16 || (format?.pixelFormat == .y16 && depthStreams.contains(id))
    }
}
