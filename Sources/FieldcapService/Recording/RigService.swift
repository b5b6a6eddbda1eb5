import FieldcapCore
import FieldcapSession
import Foundation
import Synchronization

/// The rig as `fieldcap serve` runs it: its devices as the config (or the command line) names
/// them, one recording at a time on command, with everything `fieldcap record` does (segments,
/// budget, sidecar; `fieldcap recover` after a crash), and the events of each.
public final class RigService: Sendable {
    /// What the service was started with: the config and the command line's values, over which
    /// each start request's own values go.
    public struct Base: Sendable {
        public var config: RigConfig?
        public var devices: [DeviceSpec]
        public var overrides: RecordingSettings.Overrides
        public var directIO: Bool

        public init(
            config: RigConfig?, devices: [DeviceSpec], overrides: RecordingSettings.Overrides, directIO: Bool = true
        ) {
            self.config = config
            self.devices = devices
            self.overrides = overrides
            self.directIO = directIO
        }
    }

    /// A start request's values: each nil keeps the service's.
    public struct StartRequest: Sendable {
        public var duration: TimeSpan?
        public var segment: TimeSpan?
        public var maxStorage: ByteSize?
        public var keep: TimeSpan?

        public init(
            duration: TimeSpan? = nil, segment: TimeSpan? = nil, maxStorage: ByteSize? = nil, keep: TimeSpan? = nil
        ) {
            self.duration = duration
            self.segment = segment
            self.maxStorage = maxStorage
            self.keep = keep
        }
    }

    /// A device as the service found it at start: what it was granted.
    public struct Device: Sendable {
        public var id: String
        public var kind: String
        public var device: String
        public var options: [String: String]
        public var granted: JSONValue
        public var summary: String
        public var timeSource: String
    }

    /// Why a request was refused; `status` is the HTTP status it maps to.
    public struct Refusal: Error, CustomStringConvertible {
        public enum Kind: Sendable { case badRequest, conflict, unavailable }
        public var kind: Kind
        public var description: String
    }

    public let base: Base
    /// The settings without a request's values: root, host id, limits, the devices' plan.
    public let settings: RecordingSettings
    public let devices: [Device]
    public let events = EventHub()
    public let startedAt = Date()
    private let state = Mutex<State>(State())

    struct State {
        var runner: RecordingRunner?
        /// Set while a start is opening devices, so a second start is refused, not queued.
        var starting = false
        var last: StoppedEvent?
    }

    /// Resolves the settings and opens every device once, to know they work and what they grant
    /// (then closes them: each recording opens them anew).
    public init(base: Base) throws {
        self.base = base
        settings = try RecordingSettings.resolve(config: base.config, devices: base.devices, overrides: base.overrides)
        let sources = try settings.plan.makeSources()
        devices = zip(settings.plan.specs, sources).map { spec, source in
            let report = source.report
            return Device(
                id: source.descriptor.id, kind: source.descriptor.kind.rawValue, device: source.descriptor.device,
                options: spec.options, granted: report.granted, summary: report.summary,
                timeSource: report.timeSource)
        }
    }

    /// The directory being recorded, nil when idle.
    public var recordingDirectory: String? { state.withLock { $0.runner?.controller.value.directory } }

    public var status: ServiceStatus {
        let (runner, last) = state.withLock { ($0.runner, $0.last) }
        guard let runner else { return ServiceStatus(recording: nil, status: nil, stopping: false, last: last) }
        return ServiceStatus(
            recording: runner.controller.value.directory, status: runner.status, stopping: runner.isStopping,
            last: nil)
    }

    /// Starts a recording with the request's values over the service's; refuses a second one.
    public func start(_ request: StartRequest) async throws -> String {
        var overrides = base.overrides
        if let duration = request.duration { overrides.duration = duration }
        if let segment = request.segment { overrides.segment = segment }
        if let maxStorage = request.maxStorage { overrides.maxStorage = maxStorage }
        if let keep = request.keep { overrides.keep = keep }
        // An error about the request's own fields names them as the request does.
        if request.segment != nil || request.maxStorage != nil || request.keep != nil {
            overrides.names = RecordingSettings.Names(
                hostId: "--host-id", segment: "segment", maxStorage: "max_storage", keep: "keep")
        }
        let busy = state.withLock { state in
            if state.runner != nil || state.starting { return true }
            state.starting = true
            return false
        }
        if busy {
            throw Refusal(
                kind: .conflict,
                description: "a recording is already running: stop it first (POST /api/v1/recording/stop)")
        }
        defer { state.withLock { $0.starting = false } }
        let controller: RecordingController
        do {
            let settings = try RecordingSettings.resolve(
                config: base.config, devices: base.devices, overrides: overrides)
            let sources: [CaptureSource]
            do { sources = try settings.plan.makeSources() } catch {
                throw Refusal(kind: .unavailable, description: "\(error)")
            }
            controller = RecordingController(
                sources: sources, settings: try settings.controllerSettings(for: sources, directIO: base.directIO))
        } catch let error as PlanError {
            throw Refusal(kind: .badRequest, description: error.message)
        }
        let runner = RecordingRunner(controller: controller, events: events)
        let directory: String
        do { directory = try await runner.start() } catch {
            throw Refusal(kind: .unavailable, description: "\(error)")
        }
        state.withLock { $0.runner = runner }
        events.send(.started(directory: directory))
        Task { [self] in
            let stopped = await runner.finished()
            state.withLock { state in
                if state.runner === runner { state.runner = nil }
                state.last = stopped
            }
        }
        return directory
    }

    /// Stops the recording (`why` becomes its stop reason) and waits until every file is finished.
    public func stop(_ why: String) async throws -> StoppedEvent {
        guard let runner = state.withLock({ $0.runner }) else {
            throw Refusal(
                kind: .conflict, description: "no recording is running: start one first (POST /api/v1/recording/start)")
        }
        let stopped = await runner.stop(why)
        state.withLock { state in
            if state.runner === runner { state.runner = nil }
            state.last = stopped
        }
        return stopped
    }

    /// Stops a recording in progress, if there is one: the service's shutdown.
    public func shutdown(_ why: String) async {
        _ = try? await stop(why)
    }
}
