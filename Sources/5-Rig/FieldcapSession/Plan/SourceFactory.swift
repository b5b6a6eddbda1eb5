import CPNG
import FieldcapCore
import FieldcapEncode
import FieldcapFeeds
import FieldcapHotplug
import FieldcapIIO
import FieldcapSystem
import FieldcapV4L2
import FoundationEssentials
import Logging
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// Makes capture sources of one kind from device specs: the seam between a plan and the device
/// modules. A device module's factory turns a spec's text options into the module's own typed
/// options; the plan picks the first factory that takes a spec.
public protocol SourceFactory: Sendable {
    /// Whether this factory makes the source `spec` names.
    func takes(_ spec: DeviceSpec) -> Bool
    /// Checks every option's value without opening a device.
    func check(_ spec: DeviceSpec) throws(PlanError)
    /// Opens and sets up the device. Throws `PlanError` for an option the factory cannot use,
    /// `DeviceSetupError` for a device that cannot be set up as asked.
    func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource
    /// The same, for a source that tells what happens as it captures (a feed's refused lines)
    /// to `logger`; the default makes it as `make(_:id:)` does.
    func make(_ spec: DeviceSpec, id: String, logger: Logger) throws -> CaptureSource
}

extension SourceFactory {
    public func make(_ spec: DeviceSpec, id: String, logger: Logger) throws -> CaptureSource {
        try make(spec, id: id)
    }
}

/// The factories a plan uses unless given others: synthetic sources, V4L2 cameras, IIO IMUs, feeds,
/// gpsd.
public enum SourceFactories {
    public static let standard: [SourceFactory] = [
        SyntheticSourceFactory(), V4L2SourceFactory(), IIOSourceFactory(), FeedSourceFactory(), GPSDSourceFactory(),
    ]
}

/// Synthetic cameras (a moving test pattern) and IMUs (a rig swaying gently).
public struct SyntheticSourceFactory: SourceFactory {
    public init() {}

    public func takes(_ spec: DeviceSpec) -> Bool { spec.isSynthetic && spec.kind != .sensor }

    public func check(_ spec: DeviceSpec) throws(PlanError) {
        do { _ = try make(spec, id: "check", encodingJPEG: false) } catch let error as PlanError { throw error } catch {
            throw PlanError("\(error)")
        }
    }

    public func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        try make(spec, id: id, encodingJPEG: true)
    }

    /// A synthetic camera's `picture=`: a PNG file read whole, checked against the frame.
    static func picture(
        _ path: String, spec: DeviceSpec, size: (width: Int, height: Int), pixelFormat: VideoFormat.PixelFormat,
        turning: Bool
    ) throws(PlanError) -> SyntheticCamera.Picture {
        guard !turning else {
            throw PlanError("\(spec.label) synthetic: picture= and motion= are two cameras; give one of them")
        }
        guard SyntheticCamera.pictureFormats.contains(pixelFormat) else {
            let formats = SyntheticCamera.pictureFormats.map(\.rawValue).joined(separator: ", ")
            throw PlanError("\(spec.label) synthetic: a picture is shown in \(formats) frames; give one with format=")
        }
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: UInt32 = 0, height: UInt32 = 0
        var message = [CChar](repeating: 0, count: 256)
        guard CPNG_decode_file(path, 3, &pixels, &width, &height, &message) == 0, let pixels else {
            let why = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw PlanError("\(spec.label) synthetic: picture=\(path) cannot be read (\(why)): give a PNG file")
        }
        defer { free(pixels) }
        guard Int(width) <= size.width, Int(height) <= size.height, width >= 2, height >= 2 else {
            throw PlanError(
                "\(spec.label) synthetic: picture=\(path) is \(width)x\(height), larger than the "
                    + "\(size.width)x\(size.height) frame: give a larger size= or a smaller picture")
        }
        return SyntheticCamera.Picture(
            name: PathName.base(of: path), width: Int(width), height: Int(height),
            rgb: Array(UnsafeBufferPointer(start: pixels, count: Int(width) * Int(height) * 3)))
    }

    /// `encodingJPEG` false: an MJPEG camera's options are checked without encoding its frames.
    private func make(_ spec: DeviceSpec, id: String, encodingJPEG: Bool) throws -> CaptureSource {
        switch spec.kind {
        case .camera:
            if spec.options["stall"] != nil {
                throw PlanError("\(spec.label) synthetic: stall is for V4L2 cameras; a synthetic camera never stalls")
            }
            if let stamp = spec.options["stamp"], stamp != "kernel" {
                throw PlanError(
                    "\(spec.label) synthetic: stamp=\(stamp) is for V4L2 cameras (exposure-start and"
                        + " exposure-middle for UVC ones); a synthetic camera's frames are stamped as they are made")
            }
            let known = SyntheticCamera.formats.map(\.rawValue).joined(separator: ", ")
            let pixelFormat: VideoFormat.PixelFormat
            do throws(PlanError) { pixelFormat = try spec.pixelFormat() } catch {
                throw PlanError(
                    "\(spec.label) synthetic: format '\(spec.options["format"] ?? "")' is not "
                        + "available\(DeviceSpec.storedOnlyHint(spec.options["format"] ?? "")); the "
                        + "synthetic camera makes \(known)"
                )
            }
            let size = try spec.size() ?? (640, 480)
            guard size.width % 2 == 0, size.height % 2 == 0 else {
                throw PlanError(
                    "\(spec.label) synthetic: \(size.width)x\(size.height) "
                        + "has an odd side; give an even width and height"
                )
            }
            let rate = try spec.positiveNumber("fps", limit: 1000) ?? 30
            let buffers = try spec.count("buffers", range: 2...64) ?? 8
            let motion = try spec.handMotion()
            let delay = try spec.delay()
            let fieldOfView = try spec.fieldOfView()
            if (delay != nil || fieldOfView != nil) && motion == nil {
                throw PlanError(
                    "\(spec.label) synthetic: delay and fov are for a turning camera; give motion=hand with them")
            }
            if motion != nil && !SyntheticCamera.turningFormats.contains(pixelFormat) {
                let formats = SyntheticCamera.turningFormats.map(\.rawValue).joined(separator: " or ")
                throw PlanError(
                    "\(spec.label) synthetic: a turning camera (motion=) makes \(formats); give format=GREY")
            }
            let picture = try spec.options["picture"].map { path throws(PlanError) in
                try Self.picture(path, spec: spec, size: size, pixelFormat: pixelFormat, turning: motion != nil)
            }
            guard pixelFormat == .mjpeg else {
                return SyntheticCamera(
                    id: id, width: size.width, height: size.height, rate: rate, bufferCount: buffers,
                    pixelFormat: pixelFormat,
                    turning: motion.map {
                        SyntheticCamera.Turning(motion: $0, delay: delay ?? 0, fieldOfView: fieldOfView)
                    }, picture: picture)
            }
            guard encodingJPEG else { return SyntheticCamera(id: id, width: size.width, height: size.height) }
            // A UVC camera's MJPEG: the preview's libjpeg-turbo encoder, 4:2:2 from the YUYV
            // pattern, at the quality webcams use.
            let encoder = try JPEGEncoder(
                format: VideoFormat(width: size.width, height: size.height, pixelFormat: .yuyv), quality: 85)
            return try SyntheticCamera.mjpeg(
                id: id, width: size.width, height: size.height, rate: rate, bufferCount: buffers,
                compressor: { try encoder.encode($0) })
        case .imu:
            if ["channels", "trigger", "clock", "stall"].contains(where: { spec.options[$0] != nil }) {
                throw PlanError(
                    "\(spec.label) synthetic: channels, trigger, clock and stall are for IIO devices; "
                        + "the synthetic IMU always has \(SyntheticIMU.channelNames.joined(separator: ","))"
                )
            }
            let motion = try spec.handMotion()
            let delay = try spec.delay()
            if delay != nil && motion == nil {
                throw PlanError("\(spec.label) synthetic: delay is for a turning IMU; give motion=hand with it")
            }
            return SyntheticIMU(
                id: id, rate: try spec.positiveNumber("rate", limit: 100_000) ?? 200, motion: motion,
                delay: delay ?? 0)
        case .sensor:
            throw PlanError("\(spec.label) synthetic: a sensor is fed by a program (feed:NAME); none is synthetic")
        }
    }
}

/// V4L2 cameras: every camera spec that is not synthetic.
public struct V4L2SourceFactory: SourceFactory {
    public init() {}

    public func takes(_ spec: DeviceSpec) -> Bool { spec.kind == .camera && !spec.isSynthetic }

    public func check(_ spec: DeviceSpec) throws(PlanError) { _ = try options(spec) }

    /// The spec's options, checked; `make` and `check` both read them here, so a plan check
    /// refuses what opening the device would.
    func options(_ spec: DeviceSpec) throws(PlanError) -> V4L2Camera.Options {
        try spec.refuseSyntheticMotion()
        var options = V4L2Camera.Options(
            size: try spec.size(), rate: try spec.positiveNumber("fps", limit: 1000),
            pixelFormat: try spec.pixelFormat(),
            bufferCount: try spec.count("buffers", range: 2...32) ?? 8, controls: try spec.controls())
        if let stall = try spec.stallTimeoutNs() { options.stallTimeoutNs = stall }
        options.stamp = V4L2Camera.Stamp(rawValue: try spec.stamp()) ?? .kernel
        return options
    }

    public func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        var options = try options(spec)
        options.rejoin = Self.rejoin(spec.device, returns: try spec.rejoinReturns())
        options.metadataNode = Self.metadataNode
        do {
            return try V4L2Camera(id: id, path: spec.device, options: options)
        } catch {
            throw DeviceSetupError(message: "\(spec.label) \(error)")
        }
    }
}

extension V4L2SourceFactory {
    /// The metadata node beside a USB camera's video node (uvcvideo's, with the camera's payload
    /// headers), found in sysfs: the node of the same device with the next index. nil when there is none, or
    /// when uvcvideo stamps its metadata with another clock than CLOCK_MONOTONIC (its `clock`
    /// parameter), which the camera's clock pairs do not read.
    @Sendable static func metadataNode(beside videoNode: String) -> String? {
        guard let identity = DeviceIdentity.of(videoNode: videoNode), identity.usb != nil, let index = identity.index,
            uvcClockIsMonotonic()
        else { return nil }
        // uvcvideo registers each streaming interface's capture node and then its metadata node:
        // a camera with two (IR and colour) has video0 and video1 for one, video2 and video3 for
        // the other, all under its control interface.
        return identity.siblings().first { $0.index == index + 1 }?.node
    }

    static func uvcClockIsMonotonic(_ parameter: String = "/sys/module/uvcvideo/parameters/clock") -> Bool {
        guard let text = try? String(contentsOfFile: parameter, encoding: .utf8) else { return true }
        let clock = text.filter { !$0.isWhitespace }.uppercased()
        return clock.isEmpty || clock == "CLOCK_MONOTONIC" || clock == "MONOTONIC"
    }

    /// How a camera is waited for after an unplug: the same device as udev tells devices apart
    /// (its USB port, vendor, product and serial, or its platform device). nil with `returns` 0,
    /// or for a node sysfs does not describe (nothing tells the same camera).
    static func rejoin(_ path: String, returns: Int) -> RejoinPolicy? {
        guard returns > 0, let identity = DeviceIdentity.of(videoNode: path) else { return nil }
        return waitingPolicy(for: identity, subsystem: "video4linux", returns: returns, notingOthers: true)
    }
}

/// A rejoin policy that waits for `identity`, heard of through udev's events, the kernel's
/// without udevd, or a rescan every second without either; `notingOthers`: another device found
/// in its place is noted in the absence.
func waitingPolicy(for identity: DeviceIdentity, subsystem: String, returns: Int, notingOthers: Bool) -> RejoinPolicy {
    let watching =
        "waits for \(identity), through "
        + (access("/run/udev/control", F_OK) == 0 ? "udev's events" : "the kernel's uevents (no udevd runs)")
    return RejoinPolicy(maxReturns: returns, watching: watching) { stop, note in
        let watcher = HotplugWatcher(subsystems: [subsystem])
        if case .rescan(let reason) = watcher.mode { note("no device events (\(reason)): looked every second") }
        return watcher.waitForReturn(
            of: identity, wake: stop.wakeDescriptor, isStopped: { stop.isRequested },
            differentDevice: notingOthers
                ? { node, reason in note("\(node) came in its place and was not taken: \(reason)") } : nil)
    }
}

/// IIO IMUs: every IMU spec that is not synthetic.
public struct IIOSourceFactory: SourceFactory {
    public init() {}

    public func takes(_ spec: DeviceSpec) -> Bool { spec.kind == .imu && !spec.isSynthetic }

    public func check(_ spec: DeviceSpec) throws(PlanError) { _ = try options(spec) }

    /// The spec's options, checked; `make` and `check` both read them here, so a plan check
    /// refuses what opening the device would.
    func options(_ spec: DeviceSpec) throws(PlanError) -> IIOIMU.Options {
        try spec.refuseSyntheticMotion()
        var options = IIOIMU.Options(
            rate: try spec.positiveNumber("rate", limit: 100_000), trigger: spec.options["trigger"])
        options.stallTimeoutNs = try spec.stallTimeoutNs()
        options.channels = try spec.channels() ?? options.channels
        options.keepTimestampClock = try spec.keepsTimestampClock()
        return options
    }

    public func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        var options = try options(spec)
        options.rejoin = Self.rejoin(spec.device, returns: try spec.rejoinReturns())
        do {
            return try IIOIMU(id: id, device: spec.device, options: options)
        } catch {
            throw DeviceSetupError(message: "\(spec.label) \(error)")
        }
    }
}

extension IIOSourceFactory {
    /// How an IMU is waited for after it went away: the same device as sysfs tells IIO devices
    /// apart (the device it hangs on, and its name; the IIO dummy hangs on none, so its name).
    /// nil with `returns` 0, or for a device sysfs does not list.
    static func rejoin(_ device: String, returns: Int) -> RejoinPolicy? {
        guard returns > 0, let identity = DeviceIdentity.of(iioDevice: device) else { return nil }
        // No note of another device in its place: the IIO devices of one chip (an accelerometer
        // and a gyroscope) hang on one parent, and would read as strangers in each other's place.
        return waitingPolicy(for: identity, subsystem: "iio", returns: returns, notingOthers: false)
    }
}

/// Sensors a local program feeds (`feed:NAME`): a socket that takes its JSON lines.
public struct FeedSourceFactory: SourceFactory {
    /// Where the default socket directory is read from (`XDG_RUNTIME_DIR`).
    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    public func takes(_ spec: DeviceSpec) -> Bool { spec.kind == .sensor && spec.feedName != nil }

    public func check(_ spec: DeviceSpec) throws(PlanError) { _ = try options(spec) }

    func options(_ spec: DeviceSpec) throws(PlanError) -> (name: String, options: FeedSource.Options) {
        guard let name = spec.feedName, !name.isEmpty else {
            throw PlanError("\(spec.label) \(spec.device.printable): name the feed, e.g. feed:gripper")
        }
        // A feed's name is its socket's file name, typed in shells: letters, digits, _ - . only.
        let allowed = name.unicodeScalars.allSatisfy {
            ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)))
                || "_-.".unicodeScalars.contains($0)
        }
        if let problem = StreamID.problem(with: name)
            ?? (allowed && !name.hasPrefix(".") ? nil : "use letters, digits, _, - and .")
        {
            throw PlanError(
                "\(spec.label) \(spec.device.printable): '\(name.printable)' cannot name a feed: \(problem)")
        }
        let socket = spec.options["socket"]
        if let socket, !socket.hasPrefix("/") {
            throw PlanError(
                "\(spec.label) \(spec.device.printable): socket '\(socket.printable)' must be an absolute path, "
                    + "e.g. socket=/run/fieldcap/feeds/\(name).sock")
        }
        var options = FeedSource.Options(
            socketPath: FeedSocket.path(name: name, given: socket, environment: environment))
        options.environment = environment
        options.nominalRate = try spec.positiveNumber("rate", limit: 1_000_000) ?? 0
        options.pinned = try spec.channels()
        return (name, options)
    }

    public func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        try make(spec, id: id, logger: .silent(label: "fieldcap.feed"))
    }

    /// The first few lines refused and programs turned away are told to `logger` as they come.
    public func make(_ spec: DeviceSpec, id: String, logger: Logger) throws -> CaptureSource {
        var (name, options) = try options(spec)
        options.told = { logger.warning("\(id): \($0)") }
        do {
            return try FeedSource(id: id, name: name, options: options)
        } catch {
            throw DeviceSetupError(message: "\(spec.label) \(error)")
        }
    }
}

/// A GNSS receiver through gpsd (`gpsd`, `gpsd:HOST:PORT`, with `pps` for its time offsets).
public struct GPSDSourceFactory: SourceFactory {
    public init() {}

    public func takes(_ spec: DeviceSpec) -> Bool { spec.isGPSD }

    public func check(_ spec: DeviceSpec) throws(PlanError) { _ = try options(spec) }

    func options(_ spec: DeviceSpec) throws(PlanError) -> GPSDSource.Options {
        var options = GPSDSource.Options()
        if spec.device != "gpsd" {
            // gpsd:HOST:PORT, gpsd:HOST, gpsd:[::1]:2947
            var rest = Substring(spec.device.dropFirst("gpsd:".count))
            var host = ""
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                host = String(rest[rest.index(after: rest.startIndex)..<close])
                rest = rest[rest.index(after: close)...]
                if rest.hasPrefix(":") { rest = rest.dropFirst() } else if !rest.isEmpty { host = "" }
            } else if let colon = rest.lastIndex(of: ":") {
                host = String(rest[..<colon])
                rest = rest[rest.index(after: colon)...]
            } else {
                host = String(rest)
                rest = ""
            }
            guard !host.isEmpty else {
                throw PlanError(
                    "\(spec.label) \(spec.device.printable): give gpsd's host and port as gpsd:HOST:PORT "
                        + "(gpsd:localhost:2947, gpsd:[::1]:2947), or gpsd for the local one")
            }
            options.host = host
            if !rest.isEmpty {
                guard let port = UInt16(rest), port > 0 else {
                    throw PlanError(
                        "\(spec.label) \(spec.device.printable): port '\(rest)' is not a TCP port (1 to 65535)")
                }
                options.port = port
            }
        }
        for key in ["socket", "channels"] where spec.options[key] != nil {
            throw PlanError(
                "\(spec.label) \(spec.device.printable): \(key)= is for feed:NAME; gpsd's fixes have their own channels"
            )
        }
        switch spec.options["pps"] {
        case nil, "false", "no": options.pps = false
        case "true", "yes": options.pps = true
        case let other?:
            throw PlanError("\(spec.label) \(spec.device.printable): pps '\(other.printable)' must be true or false")
        }
        options.nominalRate = try spec.positiveNumber("rate", limit: 100) ?? 1
        return options
    }

    public func make(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        try make(spec, id: id, logger: .silent(label: "fieldcap.gpsd"))
    }

    /// gpsd gone, and back, is told to `logger` as it happens.
    public func make(_ spec: DeviceSpec, id: String, logger: Logger) throws -> CaptureSource {
        var options = try options(spec)
        options.told = { logger.warning("\(id): \($0)") }
        return GPSDSource(id: id, options: options)
    }
}
