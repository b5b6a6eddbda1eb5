import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import Synchronization
import Testing

@testable import FieldcapRig

/// What happens while a recording runs is pushed by the controller as it happens, from the thread
/// it happens on (#45), here straight to a hub. Nothing here looks for it: the runner's loop only
/// samples (once a minute here) and checks the recording's own stop conditions. Then the gate
/// that keeps the rig's events between `started` and the stop.
@Suite("A recording's events, pushed", .timeLimit(.minutes(1)))
struct RecordingEventsTests {
    /// A sensor that captures for `seconds`, then fails as an unplugged device does.
    final class FailingSource: CaptureSource, @unchecked Sendable {
        let descriptor = StreamDescriptor(id: "gone", kind: .sensor, channels: ["x"], nominalRate: 100, device: "gone")
        let seconds: Double
        init(after seconds: Double) { self.seconds = seconds }

        struct Unplugged: Error, CustomStringConvertible { var description: String { "the device went away" } }

        func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
            let until = Date().addingTimeInterval(seconds)
            while !stop.isRequested && Date() < until { usleep(1000) }
            if !stop.isRequested { throw Unplugged() }
        }
    }

    static func settings(_ root: String, segments: SegmentedSessions.Settings? = nil) -> RecordingController.Settings {
        .init(hostId: "rig", root: root, minFree: ByteSize(bytes: 0), segments: segments)
    }

    /// The events heard while the recording runs, until `enough` says so; `observe` sees each
    /// of the recording's events on the thread that tells it, as it is told.
    static func events(
        sources: [CaptureSource], settings: RecordingController.Settings,
        observe: @escaping @Sendable (RecordingController.Event) -> Void = { _ in },
        enough: @escaping ([RigEvent]) -> Bool
    ) async throws -> (directory: String, events: [RigEvent]) {
        let hub = EventHub()
        var settings = settings
        settings.onEvent = { event in
            observe(event)
            hub.send(RigEvent(event))
        }
        let runner = RecordingRunner(
            controller: RecordingController(sources: sources, settings: settings), events: hub,
            options: .init(statusEvery: 60))
        let watched = hub.watch()
        let directory = try await runner.start(hooks: .init())
        var heard: [RigEvent] = []
        for await event in watched {
            heard.append(event)
            if enough(heard) { break }
        }
        _ = await runner.stop("test")
        return (directory, heard)
    }

    @Test("a stream whose capture ends is told at once; the others go on")
    func streamEnded() async throws {
        let root = NSTemporaryDirectory() + "events-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let asked = Date()
        let (_, heard) = try await Self.events(
            sources: [FailingSource(after: 0.3), SyntheticIMU(id: "imu", rate: 100)], settings: Self.settings(root)
        ) { heard in
            heard.contains { if case .streamEnded = $0 { true } else { false } }
        }
        let took = Date().timeIntervalSince(asked)
        guard case .streamEnded(let stream, let error)? = heard.last else {
            Issue.record("no stream_ended: \(heard)")
            return
        }
        #expect(stream == "gone")
        #expect(error == "the device went away")
        #expect(took < 10, "told after \(took) s")
    }

    @Test("each rotation is told once the segment it ends is complete in the index, naming the next")
    func segmentRotated() async throws {
        let root = NSTemporaryDirectory() + "events-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let segments = SegmentedSessions.Settings(lengthNs: 400_000_000, budget: StorageBudget())
        // As each rotation is told: how many segments the index has complete.
        let completeWhenTold = Mutex<[Int]>([])
        let (recording, heard) = try await Self.events(
            sources: [SyntheticIMU(id: "imu", rate: 100)], settings: Self.settings(root, segments: segments),
            observe: { event in
                guard case .segmentRotated = event,
                    let name = try? FileManager.default.contentsOfDirectory(atPath: root).first,
                    let index = RecordingIndex.read(directory: root + "/" + name)
                else { return }
                completeWhenTold.withLock { $0.append(index.segments.filter { $0.state == .complete }.count) }
            }
        ) { heard in
            heard.filter { if case .segmentRotated = $0 { true } else { false } }.count >= 2
        }
        let rotations = heard.compactMap { event -> String? in
            if case .segmentRotated(let segment) = event { segment } else { nil }
        }
        let index = try #require(RecordingIndex.read(directory: recording))
        #expect(rotations == index.segments.dropFirst().prefix(2).map(\.directory), "\(rotations)")
        #expect(completeWhenTold.withLock { Array($0.prefix(2)) } == [1, 2])
    }

    @Test("the gate holds what comes before `started`, sends what comes after, drops what comes once the stop began")
    func gate() async {
        let hub = EventHub()
        let watched = hub.watch()
        let gate = EventGate(hub: hub)
        gate.send(.diskLow(freeBytes: 1, minFreeBytes: 1))
        hub.send(.started(directory: "d"))
        gate.open()
        gate.send(.streamEnded(stream: "cam", error: "gone"))
        gate.close()
        gate.send(.segmentRotated(segment: "late"))
        hub.send(.previewUnavailable(error: "end"))
        var heard: [String] = []
        for await event in watched {
            switch event {
            case .started: heard.append("started")
            case .diskLow: heard.append("disk_low")
            case .streamEnded: heard.append("stream_ended")
            case .segmentRotated: heard.append("segment_rotated")
            case .previewUnavailable: heard.append("end")
            default: heard.append("other")
            }
            if heard.last == "end" { break }
        }
        #expect(heard == ["started", "disk_low", "stream_ended", "end"])
    }
}
