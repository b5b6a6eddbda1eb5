import FieldcapCore

/// One camera or IMU to record: a device and its options, as `--cam`/`--imu` write it or a rig
/// config's entry gives it.
///
///     synthetic                           a synthetic source with its defaults
///     synthetic:1280x720@30               size and rate in the short form
///     synthetic:1000,id=imu_wrist         IMU rate 1000 Hz, stream id imu_wrist
///     /dev/video0,size=1280x720,fps=30,format=YUYV,id=cam_left
///     /dev/video0,format=GREY,encode=jpeg:90
///     iio:device0,rate=1000,channels=accel+anglvel,trigger=trig0,clock=keep
///
/// Values are text, read by the accessors below, so a config's values mean what the same options
/// mean on the command line.
public struct DeviceSpec: Equatable, Sendable {
    /// `sensor`: any other sensor, fed by a local program (`feed:NAME`).
    public enum Kind: String, Sendable { case camera = "--cam", imu = "--imu", sensor = "--sensor" }

    public var kind: Kind
    public var device: String
    public var options: [String: String]
    /// Where the spec was written when not on the command line: `rig.yaml:12`.
    public var origin: String?

    /// How errors name the spec: `--cam` on the command line, `rig.yaml:12: camera` in a config.
    public var label: String {
        guard let origin else { return kind.rawValue }
        return "\(origin): \(kind.entryName)"
    }

    /// The option keys of each kind, plus `ctrl.NAME` for V4L2 camera controls.
    public static let cameraKeys: Set<String> = [
        "id", "size", "fps", "format", "buffers", "stall", "encode", "encoder", "threads", "rejoin", "stamp",
        "motion", "delay", "fov", "picture",
    ]
    public static let imuKeys: Set<String> = [
        "id", "rate", "channels", "trigger", "clock", "stall", "rejoin", "motion", "delay",
    ]
    public static let sensorKeys: Set<String> = ["id", "socket", "rate", "channels", "pps"]

    /// The option keys `kind` takes.
    public static func keys(of kind: Kind) -> Set<String> {
        switch kind {
        case .camera: cameraKeys
        case .imu: imuKeys
        case .sensor: sensorKeys
        }
    }

    /// A spec from its parts. A device in the short synthetic form (`synthetic:640x480@30`,
    /// `synthetic:1000`) is read as `synthetic` with `size`/`fps` or `rate` options, unless the
    /// options give them.
    public init(kind: Kind, device: String, options: [String: String], origin: String? = nil) {
        self.kind = kind
        self.origin = origin
        var options = options
        if device.hasPrefix("synthetic:") {
            let short = String(device.dropFirst("synthetic:".count))
            self.device = "synthetic"
            if kind == .camera {
                let sizeAndRate = short.split(separator: "@", maxSplits: 1).map(String.init)
                if let size = sizeAndRate.first, !size.isEmpty { options["size"] = options["size"] ?? size }
                if sizeAndRate.count == 2 { options["fps"] = options["fps"] ?? sizeAndRate[1] }
            } else if !short.isEmpty {
                options["rate"] = options["rate"] ?? short
            }
        } else {
            self.device = device
        }
        self.options = options
    }

    /// A spec as the command line writes it: `DEVICE,KEY=VALUE,...`.
    public init(kind: Kind, argument: String) throws(PlanError) {
        let parts = argument.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, !first.isEmpty else {
            throw PlanError("\(kind.rawValue) '\(argument)': name a device first, e.g. \(kind.examples)")
        }
        var options: [String: String] = [:]
        let allowed = Self.keys(of: kind)
        for part in parts.dropFirst() {
            // A sensor's flags stand alone: `gpsd,pps`.
            let pair =
                kind == .sensor && part == "pps"
                ? [part, "true"] : part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else {
                throw PlanError(
                    "\(kind.rawValue) '\(argument)': '\(part)' is not KEY=VALUE; "
                        + "keys: \(allowed.sorted().joined(separator: ", "))"
                )
            }
            guard allowed.contains(pair[0]) || (kind == .camera && pair[0].hasPrefix("ctrl.") && pair[0].count > 5)
            else {
                throw PlanError(
                    "\(kind.rawValue) '\(argument)': unknown option '\(pair[0])'; "
                        + "keys: \(allowed.sorted().joined(separator: ", "))"
                )
            }
            guard options[pair[0]] == nil else {
                throw PlanError("\(kind.rawValue) '\(argument)': '\(pair[0])' is given twice")
            }
            options[pair[0]] = pair[1]
        }
        self.init(kind: kind, device: first, options: options)
    }

    public var isSynthetic: Bool { device == "synthetic" }

    /// A GNSS receiver through gpsd: `gpsd` or `gpsd:HOST:PORT`.
    public var isGPSD: Bool { kind == .sensor && (device == "gpsd" || device.hasPrefix("gpsd:")) }

    /// A fed sensor's name (`feed:gripper` is `gripper`); nil for other devices.
    public var feedName: String? { device.hasPrefix("feed:") ? String(device.dropFirst("feed:".count)) : nil }

    // MARK: Option values

    private func problem(_ text: String) -> PlanError { PlanError("\(label) \(device): \(text)") }

    /// `size=WxH`.
    public func size() throws(PlanError) -> (width: Int, height: Int)? {
        guard let text = options["size"] else { return nil }
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (2...16384).contains(parts[0]), (1...16384).contains(parts[1]), parts[0] % 2 == 0 else {
            throw problem("size '\(text)' must be WIDTHxHEIGHT with an even width, e.g. 1280x720")
        }
        return (parts[0], parts[1])
    }

    public func positiveNumber(_ key: String, limit: Double) throws(PlanError) -> Double? {
        guard let text = options[key] else { return nil }
        guard let value = Double(text), value.isFinite, value > 0, value <= limit else {
            throw problem("\(key) '\(text)' must be a number above 0 and at most \(Int(limit))")
        }
        return value
    }

    public func count(_ key: String, range: ClosedRange<Int>) throws(PlanError) -> Int? {
        guard let text = options[key] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw problem("\(key) '\(text)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `stall=`: how long a device may deliver nothing before its stream ends, in ns.
    public func stallTimeoutNs() throws(PlanError) -> UInt64? {
        guard let text = options["stall"] else { return nil }
        guard let span = TimeSpan(text), span.seconds >= 0.1, span.seconds <= 3600 else {
            throw problem("stall '\(text)' must be a time from 100ms to 1h, e.g. stall=2s")
        }
        return span.nanoseconds
    }

    /// `motion=hand|still`: a synthetic source's rig turned by hand (the camera sees a textured wall
    /// turning, the IMU's gyroscope reads the same turning) or held still; nil when not given.
    public func handMotion() throws(PlanError) -> HandMotion? {
        guard let text = options["motion"] else { return nil }
        switch text {
        case "hand": return .waved
        case "still": return .still
        default: throw problem("motion '\(text)' must be hand (a rig turned by hand) or still")
        }
    }

    /// A device's spec with `motion=`, `delay=`, `fov=` or `picture=`, which only synthetic sources take.
    public func refuseSyntheticMotion() throws(PlanError) {
        if options["motion"] != nil || options["delay"] != nil || options["fov"] != nil {
            throw problem(
                "motion, delay and fov are for synthetic sources; a device moves as its rig is moved")
        }
        if options["picture"] != nil {
            throw problem("picture is for synthetic cameras; a device shows what is in front of it")
        }
    }

    /// `fov=DEGREES`: a turning synthetic camera's horizontal field of view (60 when not given).
    public func fieldOfView() throws(PlanError) -> Double? {
        guard let text = options["fov"] else { return nil }
        guard let value = Double(text), value >= 10, value <= 150 else {
            throw problem("fov '\(text)' must be degrees from 10 to 150, e.g. fov=90")
        }
        return value
    }

    /// `delay=MS`: how late a turning synthetic source's stamps are, in seconds (`delay=7.5ms`,
    /// `delay=-20ms`). Up to two minutes either way: a gyroscope late by the time between a
    /// scene's rendering and its playing into a real driver's loopback turns as the played
    /// scene shows, as the kernel rig's vivid test does.
    public func delay() throws(PlanError) -> Double? {
        guard let text = options["delay"] else { return nil }
        let number = text.hasSuffix("ms") ? String(text.dropLast(2)) : text
        guard let value = Double(number), value.isFinite, abs(value) <= 120_000 else {
            throw problem("delay '\(text)' must be milliseconds from -120000ms to 120000ms, e.g. delay=7.5ms")
        }
        return value / 1000
    }

    /// `rejoin=N`: how often within a minute a device that went away (unplugged) is taken up
    /// again when the same device comes back; 0 ends its stream at the first loss. 10 when not
    /// given.
    public func rejoinReturns() throws(PlanError) -> Int {
        try count("rejoin", range: 0...1000) ?? 10
    }

    /// `stamp=`: which instant a camera's `capture_ns` is: `kernel` (the default),
    /// `exposure-start` (the camera's own, where its metadata gives it), `exposure-middle`
    /// (that and half its fixed exposure time) or `dequeue`.
    public func stamp() throws(PlanError) -> String {
        let stamp = options["stamp"] ?? "kernel"
        guard Self.stamps.contains(stamp) else {
            throw problem(
                "stamp '\(stamp)' must be kernel (the kernel's timestamp, mapped), exposure-start (the camera's"
                    + " own start of exposure, from a UVC camera's metadata node), exposure-middle (that and half"
                    + " the exposure time the camera keeps) or dequeue (the moment fieldcap took the frame)")
        }
        return stamp
    }

    static let stamps = ["kernel", "exposure-start", "exposure-middle", "dequeue"]

    /// `format=`: the pixel format asked for (YUYV when not given).
    public func pixelFormat() throws(PlanError) -> VideoFormat.PixelFormat {
        guard let name = options["format"]?.uppercased() else { return .yuyv }
        guard let chosen = VideoFormat.PixelFormat.named(name), VideoFormat.PixelFormat.captured.contains(chosen)
        else {
            throw problem(
                "format '\(name)' is not one fieldcap records\(Self.storedOnlyHint(name)); use "
                    + "\(VideoFormat.PixelFormat.captured.map(\.rawValue).joined(separator: ", ")) "
                    + "(BA81, GBRG, GRBG and RGGB are the 8-bit Bayer patterns; BGGR names BA81)"
            )
        }
        return chosen
    }

    /// For `format=FFV1` (or H264, HEVC, FWHT): that it is what an encoder stores, never what a
    /// camera sends.
    static func storedOnlyHint(_ format: String) -> String {
        guard let stored = VideoFormat.PixelFormat(rawValue: format.uppercased()),
            VideoFormat.PixelFormat.storedOnly.contains(stored)
        else { return "" }
        return " (\(stored.rawValue) is stored, not captured: add encode=\(stored.rawValue.lowercased()))"
    }

    /// `encode=raw|ffv1|jpeg[:QUALITY]|h264[:BITRATE]|hevc[:BITRATE]|fwht`, with `encoder=NODE` for
    /// the hardware codecs: how the camera's frames are stored (raw when not given).
    public func encoding() throws(PlanError) -> VideoEncoding {
        let encoding = try parsedEncoding()
        if case .hardware = encoding {
        } else if let node = options["encoder"] {
            throw problem(
                "encoder=\(node) names a hardware encoder, used with encode=h264, hevc or fwht; this "
                    + "camera is \(encoding.description == "raw" ? "stored raw" : "encode=\(encoding)")"
            )
        }
        return encoding
    }

    private func parsedEncoding() throws(PlanError) -> VideoEncoding {
        guard let text = options["encode"]?.lowercased() else { return .raw }
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        switch parts[0] {
        case "raw" where parts.count == 1: return .raw
        case "jpeg", "jpg", "mjpeg":
            guard parts.count == 2 else { return .jpeg(quality: VideoEncoding.defaultJPEGQuality) }
            guard let quality = Int(parts[1]), (1...100).contains(quality) else {
                throw problem("encode '\(text)': a JPEG quality is a whole number from 1 to 100, e.g. encode=jpeg:90")
            }
            return .jpeg(quality: quality)
        case "ffv1":
            guard parts.count == 1 else {
                throw problem("encode '\(text)': FFV1 is lossless and takes no quality; use encode=ffv1")
            }
            return .ffv1
        case "h264", "avc", "hevc", "h265", "fwht":
            let codec: HardwareEncoding.Codec =
                switch parts[0] {
                case "hevc", "h265": .hevc
                case "fwht": .fwht
                default: .h264
                }
            var bitrate: Int?
            if parts.count == 2 {
                guard codec.takesBitrate else {
                    throw problem("encode '\(text)': FWHT takes no bit rate; use encode=fwht")
                }
                guard let value = Self.bitrate(parts[1]) else {
                    throw problem(
                        "encode '\(text)': a bit rate is bits per second from 100k to 100M, "
                            + "e.g. encode=\(codec.rawValue):4M or encode=\(codec.rawValue):4000000"
                    )
                }
                bitrate = value
            }
            return .hardware(HardwareEncoding(codec: codec, bitrate: bitrate, device: try encoderNode()))
        default:
            throw problem(
                "encode '\(text)' is not an encoding; use raw (the default, lossless), "
                    + "ffv1 (lossless, compressed), jpeg[:QUALITY] (e.g. encode=jpeg:90) or "
                    + "h264[:BITRATE] (a V4L2 hardware encoder, e.g. encode=h264:4M)"
            )
        }
    }

    /// `threads=N`: the camera's encoding threads (1 when not given), for encodings that code each
    /// frame alone (JPEG, FFV1); a hardware encoder is one stream through one device.
    public func encoderThreads() throws(PlanError) -> Int {
        guard let threads = try count("threads", range: 1...16) else { return 1 }
        let encoding = try encoding()
        switch encoding {
        case .jpeg, .ffv1: return threads
        case .raw:
            throw problem(
                "threads=\(threads) is for encoding threads; this camera is stored raw (add encode=jpeg or ffv1)")
        case .hardware:
            guard threads == 1 else {
                throw problem(
                    "threads=\(threads): encode=\(encoding) runs one stream through "
                        + "one hardware encoder; only jpeg and ffv1 take more threads"
                )
            }
            return 1
        }
    }

    /// `encoder=NODE`: the V4L2 encoder a hardware encoding uses (found when not given).
    private func encoderNode() throws(PlanError) -> String? {
        guard let node = options["encoder"] else { return nil }
        guard node.hasPrefix("/") else {
            throw problem(
                "encoder '\(node)' is a device node such as /dev/video11 (`fieldcap list` shows the encoders)")
        }
        return node
    }

    /// `4000000`, `4000k`, `4M`: bits per second from 100 kbit/s to 100 Mbit/s.
    static func bitrate(_ text: String) -> Int? {
        let scale: Double =
            switch text.last {
            case "k": 1e3
            case "m": 1e6
            default: 1
            }
        guard let number = Double(scale == 1 ? Substring(text) : text.dropLast()), number.isFinite else { return nil }
        let bits = number * scale
        guard (100e3...100e6).contains(bits) else { return nil }
        return Int(bits.rounded())
    }

    /// `ctrl.NAME=VALUE`: V4L2 controls, by name, in name order.
    public func controls() throws(PlanError) -> [(name: String, value: Int64)] {
        var controls: [(name: String, value: Int64)] = []
        for (key, text) in options.sorted(by: { $0.key < $1.key }) where key.hasPrefix("ctrl.") {
            guard let value = Int64(text) else { throw problem("\(key)=\(text): a control's value is a whole number") }
            controls.append((String(key.dropFirst(5)), value))
        }
        return controls
    }

    /// `channels=A+B`: IIO channel ids or kinds.
    public func channels() throws(PlanError) -> [String]? {
        guard let list = options["channels"] else { return nil }
        let names = list.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        guard !names.contains(where: \.isEmpty) else {
            throw problem(
                "channels '\(list)' must be names joined by '+', e.g. "
                    + "channels=accel_x+accel_y or channels=accel+anglvel"
            )
        }
        return names
    }

    /// `clock=raw|keep`: whether the IIO device's timestamp clock is left as it is (and mapped).
    public func keepsTimestampClock() throws(PlanError) -> Bool {
        switch options["clock"] {
        case nil, "raw": return false
        case "keep": return true
        case let other?:
            throw problem(
                "clock '\(other)' must be raw (set the device's timestamp clock to "
                    + "monotonic_raw, the default) or keep (map its clock into MONOTONIC_RAW)"
            )
        }
    }
}

extension DeviceSpec.Kind {
    /// What a rig config's entry of this kind is called (`rig.yaml:12: camera`).
    public var entryName: String {
        switch self {
        case .camera: "camera"
        case .imu: "imu"
        case .sensor: "sensor"
        }
    }

    /// Devices of this kind, for errors that ask for one.
    public var examples: String {
        switch self {
        case .camera: "synthetic:640x480@30 or /dev/video0"
        case .imu: "synthetic:1000 or iio:device0"
        case .sensor: "feed:gripper (a local program feeds it JSON lines) or gpsd"
        }
    }
}
