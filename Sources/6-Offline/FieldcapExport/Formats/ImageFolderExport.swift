import FieldcapCalibration
import FieldcapCore
import FieldcapEncode
import FieldcapFaces
import FieldcapSystem
import FoundationEssentials
import SyncField

/// `fieldcap export --format images`: one camera as an image folder in the iOS 3D Logger's
/// layout (../shared/seeds), for photogrammetry and NeRF pipelines, so its Python loading
/// snippet reads it unchanged:
///
///     metadata.json  frames.jsonl  rgb/000000.jpg ...
///     depth/000000.png (16-bit, mm) depth/000000.bin (float32, m)  confidence/000000.bin
///
/// `frames.jsonl` has a line per image: its index and time, the camera matrix (column-major,
/// when the session keeps a calibration, else null), the resolution, and the IMU sample nearest
/// the frame. Times are seconds of CLOCK_MONOTONIC_RAW (`capture_ns` / 1e9, the same clock for
/// frames and IMU, as the Logger's are ARKit's), with `capture_ns` and UTC `wall_clock_ns`
/// beside them. fieldcap tracks no pose: `camera_transform` is the identity and
/// `tracking_state` is `not_available`, as ARKit says when it has none. The IMU's acceleration
/// is given in g as `user_acceleration` with gravity still in it (there is no attitude to take
/// it out with); `metadata.json` says so.
enum ImageFolderExport {
    struct Options {
        var quality = 90
        /// Keep every n-th frame.
        var every = 1
        /// Keep at most this many frames a second (nil: all).
        var fps: Double?
        var depthStreams: Set<String> = []
        var faces: FaceCover.Settings?
    }

    /// The standard gravity, for accelerations in g as Core Motion gives them.
    static let standardGravity = 9.80665

    static func write(
        session: ExportSession, streams: [ExportSession.Stream], directory: String, options: Options,
        calibration: [String: CameraCalibration], progress: (Int) -> Void, isCancelled: () -> Bool
    ) throws(ExportError) -> [String] {
        let cameras = streams.filter { $0.isCamera && !$0.holdsDepth(options.depthStreams) }
        let depths = streams.filter { $0.isCamera && $0.holdsDepth(options.depthStreams) }
        guard cameras.count == 1, let camera = cameras.first, let format = camera.format else {
            let ids = cameras.map(\.id).joined(separator: ", ")
            throw ExportError(
                .request,
                cameras.isEmpty
                    ? "--format images needs a camera, and the streams exported have none"
                    : "--format images takes one camera and its depth: pick one of \(ids) with --streams")
        }
        guard depths.count <= 1 else {
            throw ExportError(.request, "--format images takes one depth camera: pick one with --streams")
        }
        var imuStream: ExportSession.Stream?
        for stream in streams where !stream.isCamera && imuStream == nil {
            if IMULayout(channels: try SensorReader(session: session, stream: stream).channels).isIMU {
                imuStream = stream
            }
        }

        try makeDirectory(directory)
        try makeDirectory("\(directory)/rgb")
        let depthFormat = depths.first?.format
        if depthFormat != nil {
            try makeDirectory("\(directory)/depth")
            try makeDirectory("\(directory)/confidence")
        }
        let quality = options.quality
        let jpegFormat =
            format.pixelFormat.isSixteenBit
            ? VideoFormat(width: format.width, height: format.height, pixelFormat: .grey) : format
        let encoders = try FrameEncoders<[UInt8]> { () throws(ExportError) in
            let encoder: JPEGEncoder
            do throws(EncodeError) { encoder = try JPEGEncoder(format: jpegFormat, quality: quality) } catch {
                throw ExportError(.session, "\(camera.id): \(error.description)")
            }
            let grey = format.pixelFormat.isSixteenBit ? try PixelConverter(format: format, layout: .grey8) : nil
            return { frame throws(ExportError) in
                let bytes = try grey?.pixels(frame).bytes ?? frame
                let jpeg = bytes.withUnsafeBytes { raw in Result { () throws(EncodeError) in try encoder.encode(raw) }
                }
                do throws(EncodeError) { return try jpeg.get() } catch {
                    throw ExportError(.output, "\(camera.id): \(error.description)")
                }
            }
        }

        let reader = try CameraReader(session: session, stream: camera, coveringFaces: options.faces)
        defer { reader.cancel() }
        let depthReader = try depths.first.map { stream throws(ExportError) in
            try CameraReader(session: session, stream: stream)
        }
        defer { depthReader?.cancel() }
        var nearestDepth = try depthReader.map { reader throws(ExportError) in
            try Nearest { () throws(ExportError) in try reader.next().map { ($0.captureNs, $0) } }
        }
        let imuReader = try imuStream.map { stream throws(ExportError) in
            try SensorReader(session: session, stream: stream)
        }
        let imuLayout = imuReader.map { IMULayout(channels: $0.channels) }
        var nearestIMU = try imuReader.map { reader throws(ExportError) in
            try Nearest { () throws(ExportError) in try reader.next().map { ($0.captureNs, $0) } }
        }

        let lines = try ExportFile(creating: "\(directory)/frames.jsonl")
        let intrinsics = calibration[camera.id].map { calibration in
            [calibration.fx, 0, 0, 0, calibration.fy, 0, calibration.cx, calibration.cy, 1]
        }
        var kept = 0, read = 0
        var first: UInt64?, last: UInt64 = 0
        var nextDue: UInt64 = 0
        let period = options.fps.map { UInt64(1e9 / $0) }
        var batch: [(frame: CameraReader.Frame, line: String)] = []
        func flush() throws(ExportError) {
            let files = try encoders.encode(batch.map(\.frame.bytes))
            for jpeg in files {
                try ExportFile.write(jpeg, to: "\(directory)/rgb/\(Self.fileNumber(kept)).jpg")
                kept += 1
            }
            for entry in batch { try lines.write(Array(entry.line.utf8)) }
            progress(read)
            batch.removeAll(keepingCapacity: true)
        }
        while let frame = try reader.next() {
            if isCancelled() { throw ExportError(.cancelled, "stopped: nothing written") }
            let index = read
            read += 1
            if index % options.every != 0 { continue }
            if let period {
                if frame.captureNs < nextDue { continue }
                nextDue = max(nextDue &+ period, frame.captureNs &+ period / 2)
            }
            let number = kept + batch.count
            var fields: [String] = [
                "\"frame_index\":\(number)",
                "\"timestamp\":\(Self.seconds(frame.captureNs))",
                "\"capture_ns\":\(frame.captureNs)",
                "\"wall_clock_ns\":\(session.wallClockNs(captureNs: frame.captureNs))",
                "\"source_frame_number\":\(index)",
                "\"camera_transform\":[1,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1]",
                "\"tracking_state\":\"not_available\"",
                "\"camera_intrinsics\":\(Self.json(intrinsics))",
                "\"camera_resolution\":[\(format.width),\(format.height)]",
                "\"has_depth\":\(depthFormat != nil)",
                "\"depth_resolution\":\(depthFormat.map { "[\($0.width),\($0.height)]" } ?? "null")",
            ]
            if let depthFormat, let depth = try nearestDepth?.nearest(to: frame.captureNs) {
                try writeDepth(depth.bytes, format: depthFormat, directory: directory, number: number)
                fields.append("\"depth_timestamp\":\(Self.seconds(depth.captureNs))")
            }
            if let imuLayout, let sample = try nearestIMU?.nearest(to: frame.captureNs) {
                fields.append("\"imu_timestamp\":\(Self.seconds(sample.captureNs))")
                if let gyro = imuLayout.gyroscope(sample.values) {
                    fields.append("\"rotation_rate\":\(Self.json(gyro))")
                }
                if let accel = imuLayout.accelerometer(sample.values) {
                    fields.append("\"user_acceleration\":\(Self.json(accel.map { $0 / standardGravity }))")
                }
            }
            if let covered = frame.facesCovered {
                fields.append("\"faces_covered\":[" + covered.map(\.pixelsJSON).joined(separator: ",") + "]")
            }
            first = first ?? frame.captureNs
            last = frame.captureNs
            batch.append((frame, "{" + fields.joined(separator: ",") + "}\n"))
            if batch.count == encoders.workers * 2 { try flush() }
        }
        try flush()
        try lines.finish()
        guard kept > 0 else {
            throw ExportError(
                .session,
                "\(camera.id) has no frames to export"
                    + (camera.recordedNothing ? " (it recorded nothing in this session: the device was away)" : ""))
        }

        let kernel = session.document["kernel"]?.stringValue ?? "Linux"
        let metadata = """
            {
              "sessionID": \(Self.json(PathName.base(of: session.directory))),
              "deviceModel": \(Self.json("\(session.syncPoint.hostId) \(camera.device)")),
              "osVersion": \(Self.json(kernel)),
              "startTimestamp": \(Self.seconds(first ?? 0)),
              "endTimestamp": \(Self.seconds(last)),
              "frameCount": \(kept),
              "hasDepth": \(depthFormat != nil),
              "rgbResolution": [\(format.width), \(format.height)],
              "depthResolution": \(depthFormat.map { "[\($0.width), \($0.height)]" } ?? "null"),
              "clock": "CLOCK_MONOTONIC_RAW seconds (capture_ns / 1e9); wall_clock_ns is UTC through the sync point",
              "camera": \(Self.json(camera.id)),
              "faces_covered": \(reader.facesReport?.json ?? "null"),
              "imu": \(Self.json(imuStream?.id)),
              "user_acceleration": "accelerometer in g, gravity not removed (fieldcap has no attitude estimate)",
              "camera_transform": "identity: fieldcap tracks no pose (tracking_state not_available)",
              "depth": "depth/NNNNNN.png: 16-bit millimetres; depth/NNNNNN.bin: float32 metres; \
            confidence: 2 where depth > 0, else 0"
            }

            """
        try ExportFile.write(Array(metadata.utf8), to: "\(directory)/metadata.json")
        var outcome = ["\(camera.id) -> rgb: \(kept) JPEGs of \(read) frames"]
        if let depth = depths.first { outcome.append("\(depth.id) -> depth: \(kept) PNGs and .bin, nearest in time") }
        if let imuStream { outcome.append("\(imuStream.id) -> frames.jsonl: the sample nearest each frame") }
        if let faces = reader.facesReport { outcome.append("\(camera.id): \(faces.summary)") }
        return outcome
    }

    /// The Logger's depth files for one image: the 16-bit PNG, the float32 metres, the confidence.
    private static func writeDepth(
        _ frame: [UInt8], format: VideoFormat, directory: String, number: Int
    )
        throws(ExportError)
    {
        let count = format.width * format.height
        guard frame.count >= count * 2 else { throw ExportError(.session, "a depth frame is short") }
        let name = fileNumber(number)
        let png = try PNGEncoder.encode(
            FramePixels(
                layout: .grey16, width: format.width, height: format.height, bytes: Array(frame[0..<(count * 2)])))
        try ExportFile.write(png, to: "\(directory)/depth/\(name).png")
        var metres = [UInt8](repeating: 0, count: count * 4)
        var confidence = [UInt8](repeating: 0, count: count)
        for index in 0..<count {
            let millimetres = UInt16(frame[index * 2]) | UInt16(frame[index * 2 + 1]) << 8
            let value = Float(millimetres) / 1000
            withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes in
                for byte in 0..<4 { metres[index * 4 + byte] = bytes[byte] }
            }
            confidence[index] = millimetres > 0 ? 2 : 0
        }
        try ExportFile.write(metres, to: "\(directory)/depth/\(name).bin")
        try ExportFile.write(confidence, to: "\(directory)/confidence/\(name).bin")
    }

    static func fileNumber(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }

    static func seconds(_ ns: UInt64) -> String {
        let whole = ns / 1_000_000_000, fraction = String(ns % 1_000_000_000)
        return "\(whole)." + String(repeating: "0", count: 9 - fraction.count) + fraction
    }

    static func json(_ values: [Double]?) -> String {
        guard let values else { return "null" }
        return "[" + values.map { $0.isFinite ? "\($0)" : "null" }.joined(separator: ",") + "]"
    }

    static func json(_ text: String?) -> String {
        guard let text else { return "null" }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += cFormat("\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// Of a time-ordered sequence, the element nearest each of a rising series of times, reading
/// the sequence once.
struct Nearest<Element> {
    private let next: () throws(ExportError) -> (UInt64, Element)?
    private var previous: (UInt64, Element)?
    private var upcoming: (UInt64, Element)?

    init(_ next: @escaping () throws(ExportError) -> (UInt64, Element)?) throws(ExportError) {
        self.next = next
        upcoming = try next()
    }

    mutating func nearest(to ns: UInt64) throws(ExportError) -> Element? {
        while let candidate = upcoming, candidate.0 <= ns {
            previous = candidate
            upcoming = try next()
        }
        switch (previous, upcoming) {
        case (nil, nil): return nil
        case (let before?, nil): return before.1
        case (nil, let after?): return after.1
        case (let before?, let after?): return ns - before.0 <= after.0 - ns ? before.1 : after.1
        }
    }
}
