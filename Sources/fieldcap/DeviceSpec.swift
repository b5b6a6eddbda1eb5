import ArgumentParser
import FieldcapCore
import FieldcapIIO
import FieldcapV4L2

/// One `--cam` or `--imu` argument: a device and its options.
///
///     synthetic                           a synthetic source with its defaults
///     synthetic:1280x720@30               size and rate in the short form
///     synthetic:1000,id=imu_wrist         IMU rate 1000 Hz, stream id imu_wrist
///     /dev/video0,size=1280x720,fps=30,format=YUYV,id=cam_left
///     iio:device0,rate=1000,channels=accel+anglvel,trigger=trig0,clock=keep
struct DeviceSpec: Equatable {
    enum Kind: String { case camera = "--cam", imu = "--imu" }

    var kind: Kind
    var device: String
    var options: [String: String]
    /// Where the spec was written when not on the command line: `rig.yaml:12`.
    var origin: String? = nil

    /// How errors name the spec: `--cam` on the command line, `rig.yaml:12: camera` in a config.
    var label: String {
        guard let origin else { return kind.rawValue }
        return "\(origin): \(kind == .camera ? "camera" : "imu")"
    }

    init(kind: Kind, device: String, options: [String: String], origin: String?) {
        self.kind = kind
        self.device = device
        self.options = options
        self.origin = origin
    }

    /// Plus `ctrl.NAME` for V4L2 camera controls.
    static let cameraKeys: Set<String> = ["id", "size", "fps", "format", "buffers", "stall"]
    static let imuKeys: Set<String> = ["id", "rate", "channels", "trigger", "clock", "stall"]

    init(kind: Kind, argument: String) throws {
        self.kind = kind
        let parts = argument.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let first = parts.first, !first.isEmpty else {
            throw ValidationError("\(kind.rawValue) '\(argument)': name a device first, e.g. \(kind == .camera ? "synthetic:640x480@30 or /dev/video0" : "synthetic:1000 or iio:device0")")
        }
        var options: [String: String] = [:]
        let allowed = kind == .camera ? Self.cameraKeys : Self.imuKeys
        for part in parts.dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else {
                throw ValidationError("\(kind.rawValue) '\(argument)': '\(part)' is not KEY=VALUE; keys: \(allowed.sorted().joined(separator: ", "))")
            }
            guard allowed.contains(pair[0]) || (kind == .camera && pair[0].hasPrefix("ctrl.") && pair[0].count > 5) else {
                throw ValidationError("\(kind.rawValue) '\(argument)': unknown option '\(pair[0])'; keys: \(allowed.sorted().joined(separator: ", "))")
            }
            guard options[pair[0]] == nil else {
                throw ValidationError("\(kind.rawValue) '\(argument)': '\(pair[0])' is given twice")
            }
            options[pair[0]] = pair[1]
        }
        // The short synthetic form: synthetic:WxH@FPS for cameras, synthetic:RATE for IMUs.
        if first.hasPrefix("synthetic:") {
            let short = String(first.dropFirst("synthetic:".count))
            device = "synthetic"
            if kind == .camera {
                let sizeAndRate = short.split(separator: "@", maxSplits: 1).map(String.init)
                if !sizeAndRate[0].isEmpty { options["size"] = options["size"] ?? sizeAndRate[0] }
                if sizeAndRate.count == 2 { options["fps"] = options["fps"] ?? sizeAndRate[1] }
            } else {
                options["rate"] = options["rate"] ?? short
            }
        } else {
            device = first
        }
        self.options = options
    }

    var isSynthetic: Bool { device == "synthetic" }

    func size() throws -> (width: Int, height: Int)? {
        guard let text = options["size"] else { return nil }
        let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
        guard parts.count == 2, (2...16384).contains(parts[0]), (1...16384).contains(parts[1]), parts[0] % 2 == 0 else {
            throw ValidationError("\(label) \(device): size '\(text)' must be WIDTHxHEIGHT with an even width, e.g. 1280x720")
        }
        return (parts[0], parts[1])
    }

    func positiveNumber(_ key: String, limit: Double) throws -> Double? {
        guard let text = options[key] else { return nil }
        guard let value = Double(text), value.isFinite, value > 0, value <= limit else {
            throw ValidationError("\(label) \(device): \(key) '\(text)' must be a number above 0 and at most \(Int(limit))")
        }
        return value
    }

    func count(_ key: String, range: ClosedRange<Int>) throws -> Int? {
        guard let text = options[key] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw ValidationError("\(label) \(device): \(key) '\(text)' must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `stall=`: how long a device may deliver nothing before its stream ends, in ns.
    func stallTimeoutNs() throws -> UInt64? {
        guard let text = options["stall"] else { return nil }
        guard let duration = Duration(argument: text), duration.seconds >= 0.1, duration.seconds <= 3600 else {
            throw ValidationError("\(label) \(device): stall '\(text)' must be a time from 100ms to 1h, e.g. stall=2s")
        }
        return UInt64(duration.seconds * 1e9)
    }

    /// `format=`: the pixel format asked for (YUYV when not given).
    func pixelFormat() throws -> VideoFormat.PixelFormat {
        guard let name = options["format"]?.uppercased() else { return .yuyv }
        guard let chosen = VideoFormat.PixelFormat(rawValue: name == "MJPEG" ? "MJPG" : name) else {
            throw ValidationError("\(label) \(device): format '\(name)' is not one fieldcap records; use \(VideoFormat.PixelFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return chosen
    }

    /// `ctrl.NAME=VALUE`: V4L2 controls, by name, in name order.
    func controls() throws -> [(String, Int64)] {
        try options.sorted(by: { $0.key < $1.key }).filter { $0.key.hasPrefix("ctrl.") }.map { key, text in
            guard let value = Int64(text) else {
                throw ValidationError("\(label) \(device): \(key)=\(text): a control's value is a whole number")
            }
            return (String(key.dropFirst(5)), value)
        }
    }

    /// `channels=A+B`: IIO channel ids or kinds.
    func channels() throws -> [String]? {
        guard let list = options["channels"] else { return nil }
        let names = list.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        guard !names.contains(where: \.isEmpty) else {
            throw ValidationError("\(label) \(device): channels '\(list)' must be names joined by '+', e.g. channels=accel_x+accel_y or channels=accel+anglvel")
        }
        return names
    }

    /// `clock=raw|keep`: whether the IIO device's timestamp clock is left as it is (and mapped).
    func keepsTimestampClock() throws -> Bool {
        switch options["clock"] {
        case nil, "raw": return false
        case "keep": return true
        case let other?:
            throw ValidationError("\(label) \(device): clock '\(other)' must be raw (set the device's timestamp clock to monotonic_raw, the default) or keep (map its clock into MONOTONIC_RAW)")
        }
    }

    /// Checks every option's value without opening the device (synthetic sources are built,
    /// which checks them fully).
    func checkOptions() throws {
        if isSynthetic {
            _ = try makeSource(defaultId: "check")
            return
        }
        _ = try stallTimeoutNs()
        switch kind {
        case .camera:
            _ = try (pixelFormat(), controls(), size(), positiveNumber("fps", limit: 1000), count("buffers", range: 2...32))
        case .imu:
            _ = try (positiveNumber("rate", limit: 100_000), channels(), keepsTimestampClock())
        }
    }

    /// Builds the source. `defaultId` is used when the spec has no `id=`.
    func makeSource(defaultId: String) throws -> CaptureSource {
        let id = options["id"] ?? defaultId
        guard isSynthetic else {
            if kind == .camera {
                var camera = V4L2Camera.Options(
                    size: try size(), rate: try positiveNumber("fps", limit: 1000), pixelFormat: try pixelFormat(),
                    bufferCount: try count("buffers", range: 2...32) ?? 8, controls: try controls().map { ($0, $1) })
                if let stall = try stallTimeoutNs() { camera.stallTimeoutNs = stall }
                do {
                    return try V4L2Camera(id: id, path: device, options: camera)
                } catch {
                    throw DeviceSetupError(message: "\(label) \(error)")
                }
            }
            var iio = IIOIMU.Options(rate: try positiveNumber("rate", limit: 100_000), trigger: options["trigger"])
            iio.stallTimeoutNs = try stallTimeoutNs()
            iio.channels = try channels() ?? iio.channels
            iio.keepTimestampClock = try keepsTimestampClock()
            do {
                return try IIOIMU(id: id, device: device, options: iio)
            } catch {
                throw DeviceSetupError(message: "\(label) \(error)")
            }
        }
        switch kind {
        case .camera:
            if options["stall"] != nil {
                throw ValidationError("\(label) synthetic: stall is for V4L2 cameras; a synthetic camera never stalls")
            }
            if let format = options["format"], format.uppercased() != "YUYV" {
                throw ValidationError("\(label) synthetic: format '\(format)' is not available; the synthetic camera makes YUYV")
            }
            let size = try size() ?? (640, 480)
            return SyntheticCamera(
                id: id, width: size.width, height: size.height, rate: try positiveNumber("fps", limit: 1000) ?? 30,
                bufferCount: try count("buffers", range: 2...64) ?? 8)
        case .imu:
            if options["channels"] != nil || options["trigger"] != nil || options["clock"] != nil || options["stall"] != nil {
                throw ValidationError("\(label) synthetic: channels, trigger, clock and stall are for IIO devices; the synthetic IMU always has \(SyntheticIMU.channelNames.joined(separator: ","))")
            }
            return SyntheticIMU(id: id, rate: try positiveNumber("rate", limit: 100_000) ?? 200)
        }
    }
}

/// A device that exists but cannot be set up as asked (missing, busy, refused a format, rate or
/// channel). Not a usage mistake, so the command prints the one line without the usage text.
struct DeviceSetupError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// `10s`, `500ms`, `2m`, `1h`, or plain seconds.
struct Duration: ExpressibleByArgument, Equatable {
    var seconds: Double

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = argument
        var scale = 1.0
        for (suffix, factor) in units where argument.hasSuffix(suffix) {
            let candidate = String(argument.dropLast(suffix.count))
            if Double(candidate) != nil {
                number = candidate
                scale = factor
                break
            }
        }
        guard let value = Double(number), value.isFinite, value > 0, value * scale <= 7 * 24 * 3600 else { return nil }
        seconds = value * scale
    }

    static var defaultCompletionKind: CompletionKind { .default }
}
