import FieldcapCore
import FieldcapEncode
import Logging
import SyncField

/// The devices a recording captures, from `--cam`/`--imu` or from a rig config, and the
/// factories that open them.
public struct DevicePlan: Sendable {
    public var specs: [DeviceSpec]
    public var factories: [SourceFactory]

    public init(specs: [DeviceSpec], factories: [SourceFactory] = SourceFactories.standard) {
        self.specs = specs
        self.factories = factories
    }

    /// Stream ids: `id=` where given, else cam0, cam1, ... and imu0, imu1, ...; a feed is called
    /// by its name (`feed:gripper` is `gripper`), another sensor sensor0, sensor1, ...
    public var streamIds: [String] {
        var cameraIndex = 0
        var imuIndex = 0
        var sensorIndex = 0
        var gnssIndex = 0
        return specs.map { spec in
            if let id = spec.options["id"] { return id }
            switch spec.kind {
            case .sensor:
                if let name = spec.feedName, !name.isEmpty { return name }
                if spec.isGPSD {
                    defer { gnssIndex += 1 }
                    return gnssIndex == 0 ? "gnss" : "gnss\(gnssIndex)"
                }
                defer { sensorIndex += 1 }
                return "sensor\(sensorIndex)"
            case .camera:
                defer { cameraIndex += 1 }
                return "cam\(cameraIndex)"
            case .imu:
                defer { imuIndex += 1 }
                return "imu\(imuIndex)"
            }
        }
    }

    func factory(for spec: DeviceSpec) throws(PlanError) -> SourceFactory {
        guard let factory = factories.first(where: { $0.takes(spec) }) else {
            if spec.kind == .sensor {
                throw PlanError(
                    "\(spec.label) \(spec.device.printable): a sensor is feed:NAME, a stream a local program "
                        + "feeds JSON lines (e.g. --sensor feed:gripper), or gpsd[:HOST:PORT] (a GNSS receiver)")
            }
            throw PlanError("\(spec.label) \(spec.device.printable): no kind of source takes this device")
        }
        return factory
    }

    /// Checks what can be checked without opening devices: something to capture, usable and
    /// distinct stream ids, every option's value (synthetic sources are built, which checks them
    /// fully). `verb` says what the plan is for, in the error for an empty plan.
    public func validate(verb: String) throws(PlanError) {
        if specs.isEmpty {
            throw PlanError(
                "nothing to \(verb): give at least one --cam, --imu or --sensor (try --cam synthetic --imu synthetic)")
        }
        var ids: Set<String> = []
        for (spec, id) in zip(specs, streamIds) {
            if let problem = StreamID.problem(with: id) {
                throw PlanError(
                    "\(spec.label) \(spec.device.printable): stream id '\(id.printable)' cannot be used: \(problem)")
            }
            guard ids.insert(id).inserted else {
                let fix =
                    spec.origin == nil
                    ? "give each --cam, --imu and --sensor its own id=" : "give each device its own id"
                throw PlanError(
                    "\(spec.origin.map { "\($0): " } ?? "")stream id '\(id.printable)' is used twice; \(fix)")
            }
            _ = try spec.encoding()
            if spec.kind == .camera { _ = try spec.encoderThreads() }
            try factory(for: spec).check(spec)
        }
    }

    /// How each camera's frames are stored, by stream id (`encode=`), checked against the format
    /// each camera granted: `sources` are this plan's, in order.
    public func encodings(for sources: [CaptureSource]) throws(PlanError) -> [String: VideoEncoding] {
        var encodings: [String: VideoEncoding] = [:]
        for (spec, source) in zip(specs, sources) where spec.kind == .camera {
            let encoding = try spec.encoding()
            guard encoding != .raw, let format = source.descriptor.videoFormat else { continue }
            if let problem = VideoEncoders.problem(encoding, for: format) {
                throw PlanError("\(spec.label) \(spec.device.printable): \(problem)")
            }
            encodings[source.descriptor.id] = encoding
        }
        return encodings
    }

    /// Each encoded camera's encoding threads (`threads=`), by stream id, where more than one.
    public func encoderThreads(for sources: [CaptureSource]) throws(PlanError) -> [String: Int] {
        var threads: [String: Int] = [:]
        for (spec, source) in zip(specs, sources) where spec.kind == .camera {
            let count = try spec.encoderThreads()
            if count > 1 { threads[source.descriptor.id] = count }
        }
        return threads
    }

    /// Opens and sets up every device, in order. Throws `PlanError` or `DeviceSetupError`, one
    /// line each; devices opened before the failing one are closed as the sources go.
    /// `logger` hears what sources tell as they capture (a feed's refused lines).
    public func makeSources(logger: Logger = .silent(label: "fieldcap.sources")) throws -> [CaptureSource] {
        try zip(specs, streamIds).map { spec, id in try factory(for: spec).make(spec, id: id, logger: logger) }
    }

    /// Opens and sets up one device.
    public func makeSource(_ spec: DeviceSpec, id: String) throws -> CaptureSource {
        try factory(for: spec).make(spec, id: id)
    }
}
