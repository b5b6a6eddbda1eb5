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

    /// Opens the cameras among `plan`'s devices that have a preview (when `watched.cameras`) and
    /// the sensors that have a live tap (when `watched.sensors`), and starts capturing.
    init(plan: DevicePlan, previews: Previews, live: LiveSensors, watched: Watched) throws {
        let wanted = Set(watched.cameras ? Array(previews.streams.keys) : [])
            .union(watched.sensors ? Array(live.taps.keys) : [])
        var sources: [CaptureSource] = []
        for (spec, id) in zip(plan.specs, plan.streamIds) where wanted.contains(id) {
            sources.append(try plan.makeSource(spec, id: id))
        }
        var options = Recorder.Options()
        options.frameTaps = previews.taps(for: sources.map(\.descriptor))
        options.sampleTaps = live.taps(for: sources.map(\.descriptor))
        options.idlePollNs = 100_000_000
        self.watched = watched
        recorder = Recorder(sources: sources, sink: DiscardingSink(), options: options)
        try recorder.start()
    }

    /// What it captures.
    var sources: [CaptureSource] { recorder.sources }

    /// Stops capture; the devices close when this is released.
    func stop() {
        _ = try? recorder.stop()
    }
}
