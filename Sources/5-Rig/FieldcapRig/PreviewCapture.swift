import FieldcapCore
import FieldcapPreview
import FieldcapSession

/// The rig's devices capturing for live viewers alone, while no recording runs: a `Recorder`
/// whose sink keeps nothing, each camera's frame offered to its preview's tap on the way back to
/// the camera, each sensor's sample to its live tap. Opened when someone watches and no
/// recording has the devices, closed when the last viewer has gone or a recording starts (a
/// device streams to one owner at a time).
///
/// Thread-bound: made and stopped on the rig's camera queue (`RigService`); kept in its state,
/// hence `@unchecked Sendable`.
final class PreviewCapture: @unchecked Sendable {
    /// Which of the rig's devices it captures.
    struct Watched: Equatable {
        var cameras: Bool
        var sensors: Bool
        var any: Bool { cameras || sensors }
    }

    private let recorder: Recorder
    let watched: Watched
    /// Each source's clock mapping, for the status (not the sources: those must go with this).
    let clockBoards: [(id: String, board: ClockHealthBoard)]
    /// Sensors that could not be opened, and why: the cameras' preview goes on without them.
    let sensorProblems: [String]

    /// Opens the cameras among `plan`'s devices that have a preview (when `watched.cameras`) and
    /// the sensors that have a live tap (when `watched.sensors`), and starts capturing.
    init(plan: DevicePlan, previews: Previews, live: LiveSensors, watched: Watched) throws {
        let wanted = Set(watched.cameras ? Array(previews.streams.keys) : [])
            .union(watched.sensors ? Array(live.taps.keys) : [])
        var sources: [CaptureSource] = []
        var problems: [String] = []
        for (spec, id) in zip(plan.specs, plan.streamIds) where wanted.contains(id) {
            do {
                sources.append(try plan.makeSource(spec, id: id))
            } catch  where previews.streams[id] == nil {
                problems.append("\(id): \(error)")
            }
        }
        sensorProblems = problems
        clockBoards = sources.compactMap { source in source.clockHealth.map { (source.descriptor.id, $0) } }
        var options = Recorder.Options()
        options.frameTaps = previews.taps(for: sources.map(\.descriptor))
        options.sampleTaps = live.taps(for: sources.map(\.descriptor))
        options.idlePollNs = 100_000_000
        self.watched = watched
        recorder = Recorder(sources: sources, sink: DiscardingSink(), options: options)
        try recorder.start()
    }

    /// Stops capture; the devices close when this is released.
    func stop() {
        _ = try? recorder.stop()
    }
}
