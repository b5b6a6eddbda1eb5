import FieldcapClockQuality
import FieldcapCore
import FieldcapGPIO
import FieldcapSegments
import FoundationEssentials
import SyncField

/// What a recording uses, resolved once for every front end: values given directly (the command
/// line's options, an API request's body) over the rig config's over the defaults. `fieldcap
/// record` and `fieldcap serve` both resolve through here, so a config means the same in both.
public struct RecordingSettings: Sendable {
    /// Values given directly; nil takes the config's, then the default.
    public struct Overrides: Sendable {
        public var hostId: String?
        public var root: String?
        public var duration: TimeSpan?
        public var syncEvery: TimeSpan?
        public var minFree: ByteSize?
        public var segment: TimeSpan?
        public var maxStorage: ByteSize?
        public var keep: TimeSpan?
        /// `FILE[,match=id|order]`: the cameras' calibration.
        public var intrinsics: String?
        /// Where the wall clock's discipline is read (`--wall-clock`); nil: `auto`.
        public var wallClock: ClockQualityReader.Source?
        /// The capture across rigs (`--capture-id`); checked like a host id.
        public var captureId: String?
        /// GPIO lines that mark the recording (`--mark-gpio`), as written; over the config's.
        public var markGPIO: [String] = []
        /// How errors and the index name a directly given value: `--segment` on the command line,
        /// `segment` in an API request.
        public var names = Names.commandLine

        public init(
            hostId: String? = nil, root: String? = nil, duration: TimeSpan? = nil, syncEvery: TimeSpan? = nil,
            minFree: ByteSize? = nil, segment: TimeSpan? = nil, maxStorage: ByteSize? = nil, keep: TimeSpan? = nil
        ) {
            self.hostId = hostId
            self.root = root
            self.duration = duration
            self.syncEvery = syncEvery
            self.minFree = minFree
            self.segment = segment
            self.maxStorage = maxStorage
            self.keep = keep
        }
    }

    /// The names of the directly given options, as their front end spells them.
    public struct Names: Sendable {
        public var hostId, segment, maxStorage, keep: String
        public var intrinsics = "--intrinsics"

        public static let commandLine = Names(
            hostId: "--host-id", segment: "--segment", maxStorage: "--max-storage", keep: "--keep")

        public init(
            hostId: String, segment: String, maxStorage: String, keep: String, intrinsics: String = "--intrinsics"
        ) {
            self.hostId = hostId
            self.segment = segment
            self.maxStorage = maxStorage
            self.keep = keep
            self.intrinsics = intrinsics
        }
    }

    public var plan: DevicePlan
    public var hostId: String
    public var root: String
    public var duration: TimeSpan?
    public var syncEvery: TimeSpan
    public var minFree: ByteSize
    public var segment: TimeSpan?
    public var maxStorage: ByteSize?
    public var keep: TimeSpan?
    /// How each limit was given, for errors and the index's deletion reasons: `--max-storage 16G`,
    /// or `max_storage 16G (rig.yaml)`.
    public var segmentName: String
    public var maxStorageName: String
    public var maxStorageLabel: String?
    public var keepLabel: String?
    /// The calibration file, read; matched to the cameras once they are open.
    public var intrinsics: IntrinsicsSetting?
    /// Where the wall clock's discipline is read at each sync point.
    public var wallClock = ClockQualityReader.Source.auto
    public var captureId: String?
    /// The window of a mark that names none (`mark_before`, `mark_after` in the config).
    public var markWindows = MarkWindows()
    /// The GPIO lines whose rising edges mark the recording (`--mark-gpio`, `mark_gpio`).
    public var markLines: [GPIOMarkSpec] = []

    /// Where sessions go when neither the front end nor a config says: $FIELDCAP_ROOT, else
    /// ./sessions.
    public static var defaultRoot: String { ProcessInfo.processInfo.environment["FIELDCAP_ROOT"] ?? "sessions" }

    /// The hostname's first label, or `host`.
    public static func defaultHostId() -> String {
        let name = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "host"
        return name.isEmpty ? "host" : name
    }

    /// Merges `overrides` over `config` over the defaults and checks what can be checked without
    /// opening a device: the host id, the plan, the segment options' consistency.
    public static func resolve(
        config: RigConfig?, devices: [DeviceSpec], overrides: Overrides, verb: String = "record"
    ) throws(PlanError) -> RecordingSettings {
        let names = overrides.names
        let configName = config?.path ?? "config"
        var settings = RecordingSettings(
            plan: DevicePlan(specs: config?.devices ?? devices),
            hostId: overrides.hostId ?? config?.hostId ?? defaultHostId(),
            root: overrides.root ?? config?.output ?? defaultRoot,
            duration: overrides.duration ?? config?.duration,
            syncEvery: overrides.syncEvery ?? config?.syncEvery ?? TimeSpan(seconds: 1),
            minFree: overrides.minFree ?? config?.minFree ?? RecordingController.defaultMinFree,
            segment: overrides.segment ?? config?.segment,
            maxStorage: overrides.maxStorage ?? config?.maxStorage,
            keep: overrides.keep ?? config?.keep,
            segmentName: overrides.segment != nil ? names.segment : "segment (\(configName))",
            maxStorageName: overrides.maxStorage != nil ? names.maxStorage : "max_storage (\(configName))",
            maxStorageLabel: overrides.maxStorage.map { "\(names.maxStorage) \($0)" }
                ?? config?.maxStorage.map { "max_storage \($0) (\(configName))" },
            keepLabel: overrides.keep.map { "\(names.keep) \($0)" }
                ?? config?.keep.map { "keep \($0) (\(configName))" })
        settings.wallClock = overrides.wallClock ?? .auto
        settings.captureId = overrides.captureId
        let lines = overrides.markGPIO.isEmpty ? config?.markGPIO ?? [] : overrides.markGPIO
        do throws(GPIOError) {
            settings.markLines = try lines.map { text throws(GPIOError) in try GPIOMarkSpec.parse(text) }
        } catch {
            throw PlanError("--mark-gpio \(error.message)")
        }
        settings.markWindows = MarkWindows(
            beforeSeconds: config?.markBefore ?? MarkWindows().beforeSeconds,
            afterSeconds: config?.markAfter ?? MarkWindows().afterSeconds)
        if let id = overrides.captureId, let problem = StreamID.problem(with: id) {
            throw PlanError("--capture-id '\(id.printable)' cannot be used: \(problem)")
        }
        if let text = overrides.intrinsics {
            settings.intrinsics = try IntrinsicsSetting.parse(text, name: names.intrinsics)
        } else if let config {
            settings.intrinsics = try config.intrinsicsSetting()
        }
        if let problem = StreamID.problem(with: settings.hostId) {
            throw PlanError("\(names.hostId) '\(settings.hostId.printable)' cannot be used: \(problem)")
        }
        try settings.plan.validate(verb: verb)
        // A config's segment options were checked as it was read; these are the direct ones
        // (which may lean on the config's segment).
        if settings.segment == nil {
            if overrides.maxStorage != nil {
                throw PlanError(
                    "\(names.maxStorage) needs \(names.segment): the budget deletes "
                        + "whole finished segments (add \(names.segment) 30s, for one)"
                )
            }
            if overrides.keep != nil {
                throw PlanError(
                    "\(names.keep) needs \(names.segment): old footage goes one "
                        + "finished segment at a time (add \(names.segment) 30s, for one)"
                )
            }
        }
        if let maxStorage = overrides.maxStorage, maxStorage.bytes == 0 {
            throw PlanError(
                "\(names.maxStorage) 0 would keep nothing: give a size that holds a few segments (16G)")
        }
        return settings
    }

    /// The segments' settings for these streams, or nil for one session; refuses a segment
    /// shorter than a stream's period and a budget smaller than one segment.
    public func segmentSettings(for streams: [StreamDescriptor]) throws(PlanError) -> SegmentedSessions.Settings? {
        guard let segment else { return nil }
        for stream in streams where stream.nominalRate > 0 {
            let period = 1 / stream.nominalRate
            if segment.seconds < period {
                throw PlanError(
                    "\(segmentName) \(segment) is shorter than one \(stream.kind == .video ? "frame" : "sample") "
                        + "of \(stream.id) (\(SourceReport.rate(stream.nominalRate)) per second): give at least "
                        + "\(TimeSpan(seconds: period))"
                )
            }
        }
        let estimate = SegmentedSessions.estimatedBytes(streams: streams, seconds: segment.seconds)
        if let maxStorage, maxStorage.bytes < estimate {
            throw PlanError(
                "\(maxStorageName) \(maxStorage) is less than one \(segment) segment of these streams "
                    + "(about \(ByteSize(bytes: estimate))): raise \(maxStorageName) or shorten \(segmentName)"
            )
        }
        return SegmentedSessions.Settings(
            lengthNs: segment.nanoseconds,
            budget: StorageBudget(maxBytes: maxStorage?.bytes, keepNs: keep?.nanoseconds),
            maxStorageLabel: maxStorageLabel ?? "", keepLabel: keepLabel ?? "")
    }

    /// The controller's settings for these sources (`out`: an explicit session directory); the
    /// calibration is matched to the cameras' granted sizes here.
    public func controllerSettings(
        for sources: [CaptureSource], out: String? = nil, directIO: Bool = true
    ) throws(PlanError) -> RecordingController.Settings {
        var settings = RecordingController.Settings(
            hostId: hostId, out: out, root: root, duration: duration, syncEvery: syncEvery, minFree: minFree,
            directIO: directIO, segments: try segmentSettings(for: sources.map(\.descriptor)))
        settings.calibration = try intrinsics?.assign(to: sources)
        settings.encodings = try plan.encodings(for: sources)
        settings.encoderThreads = try plan.encoderThreads(for: sources)
        settings.wallClock = ClockQualityReader(source: wallClock)
        settings.captureId = captureId
        settings.markWindows = markWindows
        // A line that does not exist, or that another program holds, is refused before anything is
        // recorded.
        for line in markLines {
            do throws(GPIOError) { try GPIOEdgeWatcher.check(line) } catch { throw PlanError(error.message) }
        }
        settings.markLines = markLines
        return settings
    }
}
