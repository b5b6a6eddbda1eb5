import FieldcapCore
import FieldcapSession
import Foundation
import Testing

@testable import FieldcapRig

/// The recording's runner, which `fieldcap record` and the service share: a stop the disk holds is
/// given up (#43), so the front end answers and can itself be stopped.
@Suite("The recording runner: a stop the disk holds")
struct RecordingRunnerTests {
    /// A sensor whose capture thread does not end when asked until `release`: what a writer held
    /// by a share that went away looks like to the thread that stops the recording.
    final class HeldSource: CaptureSource, @unchecked Sendable {
        let descriptor = StreamDescriptor(id: "held", kind: .sensor, channels: ["x"], nominalRate: 100, device: "held")
        let released = DispatchSemaphore(value: 0)

        func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
            while !stop.isRequested { usleep(1000) }
            released.wait()
        }
    }

    @Test("a stop that does not end is given up: the waiters hear why, and the service goes on")
    func heldStopIsGivenUp() async throws {
        let root = NSTemporaryDirectory() + "runner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let source = HeldSource()
        let controller = RecordingController(
            sources: [source], settings: .init(hostId: "rig", root: root, minFree: ByteSize(bytes: 0)))
        // 0.2 s on a suspect disk; this one is not seen stalling, so three times that.
        let runner = RecordingRunner(
            controller: controller, events: EventHub(), options: .init(stopLimitSeconds: 0.2))
        let directory = try await runner.start()
        // Without the watchdog the stop would wait for ever: let it go after 15 s, to fail below.
        let failSafe = Task {
            try await Task.sleep(for: .seconds(15))
            source.released.signal()
        }
        defer { failSafe.cancel() }
        let asked = Date()
        let stopped = await runner.stop("test")
        let took = Date().timeIntervalSince(asked)
        #expect(stopped.reason == "disk not answering")
        #expect(stopped.directory == directory)
        #expect(stopped.error?.contains("fieldcap recover") == true, "\(stopped.error ?? "")")
        #expect(took >= 0.5 && took < 10, "gave up after \(took) s")
        // The stop's thread was waiting all along; once it ends, its outcome changes nothing.
        source.released.signal()
        try await Task.sleep(for: .seconds(1))
        let later = await runner.finished()
        #expect(later.reason == "disk not answering")
    }
}
