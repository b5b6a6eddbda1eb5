import Foundation
import SyncField
import Synchronization
import Testing

@testable import FieldcapCore

/// A source that pushes a script of samples as fast as it can, then waits to be stopped.
final class ScriptedSource: CaptureSource, @unchecked Sendable {
    let descriptor: StreamDescriptor
    let count: Int
    let finishedPushing = DispatchSemaphore(value: 0)
    private(set) var accepted = 0

    init(id: String, count: Int) {
        self.count = count
        descriptor = StreamDescriptor(id: id, kind: .sensor, channels: ["x", "y"], nominalRate: 1000, device: "script")
    }

    func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        var record = CaptureRecord()
        for sequence in 0..<count {
            record.sequence = UInt64(sequence)
            record.captureNs = 1_000_000 + UInt64(sequence) * 1000
            record.dequeueNs = record.captureNs
            record.uncertaintyNs = 1000
            record.values[0] = Double(sequence)
            record.values[1] = -Double(sequence)
            record.valueCount = 2
            if ring.push(record, sequence: UInt64(sequence)) { accepted += 1 }
        }
        finishedPushing.signal()
        while !stop.isRequested { usleep(1000) }
    }
}

/// A sink that holds the writer at its first record until released: a disk that stalls.
final class GatedSink: RecordSink {
    let inner: SyncSessionSink
    let gate = DispatchSemaphore(value: 0)
    private var opened = false

    init(session: SyncSession) { inner = SyncSessionSink(session: session) }

    func open(streams: [StreamDescriptor]) throws { try inner.open(streams: streams) }

    func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws -> Bool {
        if !opened {
            gate.wait()
            opened = true
        }
        return try inner.write(record, frame: frame, stream: stream, frameNumber: frameNumber)
    }

    func close() throws -> [String: Int] { try inner.close() }
}

/// A sensor source that never drops: when its ring is full it waits and tries again, so it
/// finishes only if a writer drains its ring (a capture thread must never do this; a test
/// source may, to show which writer drains what).
final class PatientSource: CaptureSource, @unchecked Sendable {
    let descriptor: StreamDescriptor
    let count: Int
    let finishedPushing = DispatchSemaphore(value: 0)

    init(id: String, count: Int) {
        self.count = count
        descriptor = StreamDescriptor(id: id, kind: .sensor, channels: ["x"], nominalRate: 1000, device: "patient")
    }

    func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        var record = CaptureRecord()
        for sequence in 0..<count {
            record.sequence = UInt64(sequence)
            record.captureNs = 1_000_000 + UInt64(sequence) * 1000
            record.dequeueNs = record.captureNs
            record.values[0] = Double(sequence)
            record.valueCount = 1
            while !ring.tryPush(record) {
                if stop.isRequested { return }
                usleep(200)
            }
        }
        finishedPushing.signal()
        while !stop.isRequested { usleep(1000) }
    }
}

/// A sink that holds back the frames of video streams until released: a disk that stalls under
/// the videos. Sensor records go through at once.
final class VideoGatedSink: RecordSink {
    let inner: SyncSessionSink
    let gate = DispatchSemaphore(value: 0)
    let frameWaiting = DispatchSemaphore(value: 0)
    private let released = Atomic<Bool>(false)

    init(session: SyncSession) { inner = SyncSessionSink(session: session) }

    func open(streams: [StreamDescriptor]) throws { try inner.open(streams: streams) }

    func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws -> Bool {
        if frame != nil && !released.load(ordering: .acquiring) {
            frameWaiting.signal()
            gate.wait()
            released.store(true, ordering: .releasing)
        }
        return try inner.write(record, frame: frame, stream: stream, frameNumber: frameNumber)
    }

    func close() throws -> [String: Int] { try inner.close() }
}

func temporaryPath(_ label: String) -> String { NSTemporaryDirectory() + "/\(label)-\(UUID().uuidString)" }

@Suite("Recorder pipeline")
struct RecorderTests {
    @Test("a stalled writer never holds up capture: the full ring drops, exactly, and the files stay valid")
    func stalledWriterDrops() throws {
        let path = temporaryPath("recorder-stall")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig", outputDir: path)
        try session.start()
        let sink = GatedSink(session: session)
        let source = ScriptedSource(id: "imu", count: 10_000)
        var options = Recorder.Options()
        options.ringCapacity = 64
        let recorder = Recorder(sources: [source], sink: sink, options: options)
        try recorder.start()
        // Capture must finish all 10,000 pushes while the writer is stuck (a bounded wait, so a
        // capture thread that blocked would fail the test rather than hang it).
        #expect(source.finishedPushing.wait(timeout: .now() + 60) == .success)
        sink.gate.signal()
        let summary = try recorder.stop()
        #expect(source.accepted == 64)
        #expect(
            summary == [
                Recorder.StreamSummary(
                    id: "imu", written: 64, dropped: 10_000 - 64, droppedRange: 64...9_999, droppedRuns: [64...9_999],
                    capturedSpanNs: 1_000_000...1_063_000)
            ])
        let report = SessionValidator.validate(directory: path)
        #expect(report.problems.isEmpty, "\(report.problems)")
        let lines = try String(contentsOfFile: path + "/imu.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 64)
        #expect(lines.last?.contains(#""channels":{"x":63,"y":-63}"#) == true)
        #expect(lines.last?.contains(#""frame_number":63"#) == true)
    }

    @Test("a camera whose buffers are all at the writer drops and counts frames instead of waiting")
    func buffersHeldByWriter() throws {
        let path = temporaryPath("recorder-buffers")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig", outputDir: path)
        try session.start()
        let sink = GatedSink(session: session)
        let camera = SyntheticCamera(id: "cam", width: 64, height: 48, rate: 200, bufferCount: 2)
        let recorder = Recorder(sources: [camera], sink: sink)
        try recorder.start()
        // The writer is stuck on the first frame; the camera's other buffer fills, then every
        // frame is dropped. Wait (bounded) until drops show, then let the writer go.
        let deadline = Date().addingTimeInterval(30)
        while (recorder.statistics.first?.dropped ?? 0) < 20 && Date() < deadline { usleep(10_000) }
        sink.gate.signal()
        usleep(100_000)
        let summary = try recorder.stop()
        #expect(summary[0].dropped >= 20)
        #expect(summary[0].droppedRuns.first?.lowerBound == 2)  // frames 0 and 1 had the two buffers
        #expect(summary[0].written >= 2)
        #expect(SessionValidator.validate(directory: path).problems.isEmpty)
    }

    @Test("a video write that hangs holds up no sensor: every sample is written while the video's writer waits")
    func hangingVideoWriteHoldsUpNoSensor() throws {
        let path = temporaryPath("recorder-video-stall")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig", outputDir: path)
        try session.start()
        let sink = VideoGatedSink(session: session)
        let camera = SyntheticCamera(id: "cam", width: 64, height: 48, rate: 100, bufferCount: 2)
        let imu = PatientSource(id: "imu", count: 10_000)
        var options = Recorder.Options()
        options.ringCapacity = 64  // 10,000 samples pass only if a writer drains the ring meanwhile
        let recorder = Recorder(sources: [camera, imu], sink: sink, options: options)
        try recorder.start()
        // Bounded waits: a writer that waited for the video would fail the test, not hang it.
        #expect(sink.frameWaiting.wait(timeout: .now() + 30) == .success, "no frame reached the sink")
        #expect(
            imu.finishedPushing.wait(timeout: .now() + 60) == .success,
            "the IMU's ring was not drained while the video's write hung")
        let deadline = Date().addingTimeInterval(30)
        while recorder.statistics[1].written < 10_000 && Date() < deadline { usleep(10_000) }
        #expect(recorder.statistics[1].written == 10_000)
        // Meanwhile the camera, its buffers held by the hung write, dropped frames and counted them.
        while recorder.statistics[0].dropped < 10 && Date() < deadline { usleep(10_000) }
        sink.gate.signal()
        let summary = try recorder.stop()
        #expect(
            summary[1]
                == Recorder.StreamSummary(
                    id: "imu", written: 10_000, dropped: 0, capturedSpanNs: 1_000_000...10_999_000))
        #expect(summary[0].dropped >= 10)
        #expect(summary[0].written >= 1)
        // Every frame written has its line, numbered by its place among them.
        let lines = try String(contentsOfFile: path + "/cam.timestamps.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == summary[0].written)
        #expect(lines.last?.contains(#""frame_number":\#(summary[0].written - 1),"#) == true)
        #expect(SessionValidator.validate(directory: path).problems.isEmpty)
    }

    @Test("the sensor streams share one writer thread; each video stream has its own, sleeping as its camera allows")
    func writerThreads() {
        let video = { (id: String, rate: Double) in
            StreamDescriptor(
                id: id, kind: .video, nominalRate: rate, device: "test",
                videoFormat: VideoFormat(width: 64, height: 48, pixelFormat: .yuyv), frameBuffers: 8)
        }
        let sensor = { (id: String) in
            StreamDescriptor(id: id, kind: .sensor, channels: ["x"], nominalRate: 1000, device: "test")
        }
        let lanes = Recorder.lanes(
            for: [video("cam0", 30), sensor("imu"), video("cam1", 60), sensor("mag")], maximumIdlePollNs: 100_000_000)
        #expect(lanes.map(\.threadName) == ["fc-writer", "fc-wr-cam0", "fc-wr-cam1"])
        #expect(lanes.map(\.streams) == [[1, 3], [0], [2]])
        #expect(lanes.map { $0.idlePollNs / 100_000 } == [1000, 888, 444])
        #expect(Recorder.lanes(for: [video("cam", 30)], maximumIdlePollNs: 5_000_000).map(\.idlePollNs) == [5_000_000])
    }

    @Test("stopping in the middle of a synthetic recording writes every captured sample, and the session validates")
    func stopInTheMiddle() throws {
        let path = temporaryPath("recorder-synthetic")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig", outputDir: path)
        try session.start()
        let recorder = Recorder(
            sources: [SyntheticIMU(id: "imu", rate: 1000), SyntheticIMU(id: "imu_b", rate: 200)],
            sink: SyncSessionSink(session: session))
        try recorder.start()
        usleep(300_000)
        let summary = try recorder.stop()
        #expect(summary.map(\.id) == ["imu", "imu_b"])
        #expect(summary.allSatisfy { $0.written > 0 && $0.dropped == 0 && $0.captureError == nil })
        let report = SessionValidator.validate(directory: path)
        #expect(report.problems.isEmpty, "\(report.problems)")
        let lines = try String(contentsOfFile: path + "/imu.timestamps.jsonl", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == summary[0].written)
        // Synthetic readings are physical: gravity on z.
        let first = try String(contentsOfFile: path + "/imu.jsonl", encoding: .utf8).split(separator: "\n")[0]
        #expect(first.contains(#""accel_z":-9.8"#))
    }

    @Test("a source whose capture loop fails ends alone; the others go on and the error is reported")
    func failingSource() throws {
        final class Failing: CaptureSource, @unchecked Sendable {
            let descriptor = StreamDescriptor(
                id: "broken", kind: .sensor, channels: ["v"], nominalRate: 10, device: "x")
            struct Gone: Error, CustomStringConvertible { var description: String { "device disappeared" } }
            func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws { throw Gone() }
        }
        let path = temporaryPath("recorder-failing")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = SyncSession(hostId: "rig", outputDir: path)
        try session.start()
        let recorder = Recorder(
            sources: [Failing(), SyntheticIMU(id: "imu", rate: 500)], sink: SyncSessionSink(session: session))
        try recorder.start()
        usleep(200_000)
        let summary = try recorder.stop()
        #expect(summary[0].captureError == "device disappeared")
        #expect(summary[0].written == 0)
        #expect(summary[0].capturedSpanNs == nil)
        #expect(summary[1].written > 0)
    }

    @Test("a device away and back is told as it happens; one still away at the stop ends its stream, with when")
    func deviceAway() throws {
        /// Goes away at once; comes back after 20 ms when `returns`, else stays away.
        final class Leaving: CaptureSource, @unchecked Sendable {
            let descriptor: StreamDescriptor
            let presence: StreamPresence? = StreamPresence()
            let returns: Bool
            init(id: String, returns: Bool) {
                descriptor = StreamDescriptor(id: id, kind: .sensor, channels: ["v"], nominalRate: 100, device: "x")
                self.returns = returns
            }
            func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
                presence?.left(atNs: MonotonicClock.now(), reason: "x: gone")
                if returns {
                    usleep(20_000)
                    presence?.returned(atNs: MonotonicClock.now(), as: "y")
                }
                while !stop.wait(milliseconds: 10) {}
            }
        }
        let told = Mutex<[String]>([])
        var options = Recorder.Options()
        options.presenceChanged = { stream, absence in
            told.withLock { $0.append("\(stream) " + (absence.returnedNs == nil ? "away" : "back")) }
        }
        let recorder = Recorder(
            sources: [Leaving(id: "back", returns: true), Leaving(id: "gone", returns: false)], sink: DiscardingSink(),
            options: options)
        try recorder.start()
        usleep(100_000)
        let summary = try recorder.stop()
        #expect(Set(told.withLock { $0 }) == ["back away", "back back", "gone away"])
        #expect(summary[0].captureError == nil)
        #expect(summary[0].absences.count == 1 && summary[0].absences[0].returnedNs != nil)
        let gone = summary[1]
        #expect(gone.captureError == "x: gone; it had not come back by the stop")
        #expect(gone.endedEarlyAtNs == gone.absences.first?.leftNs)
    }

    @Test("the writer sleeps while a third of the tightest camera's buffers fill, at most 100 ms, at least 2 ms")
    func idleSleepFitsTheCameras() {
        func camera(_ rate: Double, buffers: Int?) -> StreamDescriptor {
            StreamDescriptor(
                id: "cam", kind: .video, nominalRate: rate, device: "test",
                videoFormat: VideoFormat(width: 64, height: 48, pixelFormat: .yuyv), frameBuffers: buffers)
        }
        let imu = StreamDescriptor(id: "imu", kind: .sensor, channels: ["x"], nominalRate: 1000, device: "test")
        let ms = { (streams: [StreamDescriptor]) in Double(Recorder.Options.idlePollNs(for: streams)) / 1e6 }
        #expect(ms([imu]) == 100)
        #expect(ms([]) == 100)
        #expect(abs(ms([camera(30, buffers: 8)]) - 88.9) < 0.1)
        #expect(abs(ms([imu, camera(30, buffers: 8), camera(60, buffers: 4)]) - 22.2) < 0.1)
        #expect(ms([camera(5, buffers: 32)]) == 100)
        #expect(ms([camera(1000, buffers: 2)]) == 2)
        // Unknown: 4 buffers, 30 fps.
        #expect(abs(ms([camera(0, buffers: nil)]) - 44.4) < 0.1)
    }
}
