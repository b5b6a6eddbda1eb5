import FieldcapCore
import FieldcapPreview
import FieldcapSession

/// The rig's cameras capturing for the preview alone, while no recording runs: a `Recorder`
/// whose sink keeps nothing, each frame offered to its camera's tap on the way back to the
/// camera. Opened when someone watches and no recording has the cameras, closed when the last
/// viewer has gone or a recording starts (a camera streams to one owner at a time).
///
/// Thread-bound: made and stopped on the rig's camera queue (`RigService`); kept in its state,
/// hence `@unchecked Sendable`.
final class PreviewCapture: @unchecked Sendable {
    private let recorder: Recorder

    /// Opens the cameras among `plan`'s devices and starts capturing.
    init(plan: DevicePlan, previews: Previews) throws {
        let cameraIds = Set(previews.streams.keys)
        var sources: [CaptureSource] = []
        for (spec, id) in zip(plan.specs, plan.streamIds) where cameraIds.contains(id) {
            sources.append(try plan.makeSource(spec, id: id))
        }
        var options = Recorder.Options()
        options.frameTaps = previews.taps(for: sources.map(\.descriptor))
        options.idlePollNs = 100_000_000
        recorder = Recorder(sources: sources, sink: DiscardingSink(), options: options)
        try recorder.start()
    }

    /// Stops capture; the cameras close when this is released.
    func stop() {
        _ = try? recorder.stop()
    }
}
