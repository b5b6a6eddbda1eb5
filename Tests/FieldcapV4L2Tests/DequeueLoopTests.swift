import CV4L2
import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization
import Testing

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// The decisions of `V4L2Camera`'s capture loop, driven through the device seam by a scripted
/// driver: frame times, sequence gaps, flags, the errnos that end a stream and those that do not,
/// a stall, a full ring. The kernel rig's vivid tests prove the same loop against the real driver.
@Suite("V4L2 dequeue loop")
struct DequeueLoopTests {
    typealias Step = ScriptedCameraDriver.Step

    /// A camera run to the end of its script (or until `until` holds), then stopped.
    struct Run {
        let camera: V4L2Camera
        let driver: ScriptedCameraDriver
        let ring: SPSCRing<CaptureRecord>
        var records: [CaptureRecord] = []
        var error: (any Error)?
        var deviceError: DeviceError? { error as? DeviceError }
    }

    static let path = "/nonexistent/scripted-video0"

    /// Runs a camera on `script` on its own thread. The test plays the writer: it reads the ring
    /// while the camera runs (unless `readDuringRun` is false) and gives every frame's buffer back
    /// at once (unless `release` is false: then it keeps them all).
    static func run(
        _ script: [Step], stallTimeoutNs: UInt64 = 2_000_000_000, ringCapacity: Int = 64, release: Bool = true,
        readDuringRun: Bool = true, queueFailure: (afterFrames: Int, errno: Int32)? = nil,
        until: ((ScriptedCameraDriver, Bool) -> Bool)? = nil, rejoin: RejoinPolicy? = nil,
        anotherCameraAfterReopen: Bool = false, movedAfterReopen: Bool = false, failedReopens: Int = 0,
        widthAfterReopen: UInt32? = nil, stamp: V4L2Camera.Stamp = .kernel, metadataNode: Bool = false,
        metadataWithoutClock: Bool = false
    ) throws -> Run {
        let driver = ScriptedCameraDriver(
            script, queueFailure: queueFailure, anotherCameraAfterReopen: anotherCameraAfterReopen,
            movedAfterReopen: movedAfterReopen, failedReopens: failedReopens, widthAfterReopen: widthAfterReopen,
            metadataWithoutClock: metadataWithoutClock)
        var options = V4L2Camera.Options(bufferCount: 4, stallTimeoutNs: stallTimeoutNs)
        options.rejoin = rejoin
        options.stamp = stamp
        if metadataNode { options.metadataNode = { _ in ScriptedCameraDriver.metadataPath } }
        let camera = try V4L2Camera(id: "cam", path: path, options: options, calls: driver)
        // The first frame is stamped after the camera was set up, as a real one is.
        usleep(3_000)
        var run = Run(camera: camera, driver: driver, ring: SPSCRing(minimumCapacity: ringCapacity))
        let stop = StopSignal()
        let finished = Atomic<Bool>(false)
        let failure = Mutex<(any Error)?>(nil)
        let ring = run.ring
        let thread = DedicatedThread(name: "scripted-cam") {
            do { try camera.run(into: ring, stop: stop) } catch { failure.withLock { $0 = error } }
            finished.store(true, ordering: .releasing)
        }
        let done = until ?? { driver, _ in driver.remaining == 0 }
        let deadline = MonotonicClock.now() + 20_000_000_000
        func drain() {
            while let record = ring.pop() {
                run.records.append(record)
                if release { camera.releaseBuffer(record.bufferIndex) }
            }
        }
        while !done(driver, finished.load(ordering: .acquiring)) && MonotonicClock.now() < deadline {
            if readDuringRun { drain() }
            usleep(1_000)
        }
        stop.request()
        thread.join()
        drain()
        run.error = failure.withLock { $0 }
        return run
    }

    @Test("a frame's kernel time is mapped into CLOCK_MONOTONIC_RAW, within the bound it carries")
    func mappedTimes() throws {
        let run = try Self.run((0..<6).map { Step.frame(sequence: UInt32($0)) })
        #expect(run.error == nil)
        let handed = run.driver.handed
        try #require(run.records.count == 6 && handed.count == 6)
        for (record, frame) in zip(run.records, handed) {
            #expect(record.sequence == UInt64(frame.sequence))
            #expect(record.bufferIndex == Int32(frame.index))
            #expect(record.captureNs <= record.dequeueNs)
            // The driver's own RAW reading beside its stamp, against the camera's mapping of it.
            let error = abs(Int64(record.captureNs) - frame.rawNs)
            let bound = Int64(record.uncertaintyNs) + frame.rawWidthNs
            #expect(error <= bound, "frame \(frame.sequence): off by \(error) ns")
            #expect(record.uncertaintyNs < 1_000_000)
        }
        #expect(run.camera.untrustedTimestamps == 0)
        #expect(run.camera.sequenceGaps.count == 0)
        #expect(run.camera.framesDequeued == 6)
        #expect(run.driver.streamOffs == 1, "the stream is turned off when the loop ends")
        #expect(run.driver.waitsWithoutStop == 0, "every wait can be woken by a stop")
    }

    @Test("stamp=dequeue: every frame's capture_ns is its dequeue time, bound one period; the kernel's time kept")
    func dequeueStamps() throws {
        let run = try Self.run((0..<6).map { Step.frame(sequence: UInt32($0)) }, stamp: .dequeue)
        #expect(run.error == nil)
        try #require(run.records.count == 6)
        for record in run.records {
            #expect(record.captureNs == record.dequeueNs)
            #expect(record.uncertaintyNs == UInt64(1e9 / run.camera.grantedRate))
            #expect(record.deviceNs != 0, "the kernel's time stays in the record, for the frame log")
        }
        #expect(run.camera.untrustedTimestamps == 0, "a chosen instant is not a fallback")
        #expect(run.camera.report.timeSource == "dequeue (stamp=dequeue)")
    }

    @Test("a jump in the kernel's sequence is frames the kernel lost: counted, and the numbers kept")
    func sequenceGaps() throws {
        let run = try Self.run([10, 11, 14, 15, 16, 20].map { Step.frame(sequence: $0) })
        #expect(run.error == nil)
        #expect(run.records.map(\.sequence) == [0, 1, 4, 5, 6, 10])
        #expect(run.camera.sequenceGaps.count == 5)
        #expect(run.camera.sequenceGaps.droppedRuns == [2...3, 7...9])
    }

    @Test("a time the loop cannot trust gives the frame its dequeue time, counted by reason")
    func untrustedTimes() throws {
        let copied = UInt32(V4L2_BUF_FLAG_TIMESTAMP_COPY)
        let run = try Self.run([
            .frame(sequence: 0, flags: copied),
            .frame(sequence: 1, stamp: .beforeDequeue(-1_000_000_000)),
            .frame(sequence: 2),
            .frame(sequence: 3, stamp: .beforePrevious(1_000_000)),
            .frame(sequence: 4),
        ])
        #expect(run.error == nil)
        try #require(run.records.count == 5)
        let fallbacks = run.camera.dequeueFallbacks
        #expect(fallbacks[V4L2Camera.DequeueFallback.notMonotonic.rawValue] == 1)
        #expect(fallbacks[V4L2Camera.DequeueFallback.aheadOfDequeue.rawValue] == 1)
        #expect(fallbacks[V4L2Camera.DequeueFallback.backwards.rawValue] == 1)
        let period = UInt64(1e9 / 30)
        for index in [0, 1, 3] {
            let record = run.records[index]
            #expect(record.uncertaintyNs == period, "frame \(index) carries one frame period")
            #expect(record.captureNs == record.dequeueNs, "frame \(index) carries its dequeue time")
        }
        #expect(run.records[2].uncertaintyNs < period && run.records[4].uncertaintyNs < period)
        // Whatever a frame's source of time, capture_ns never goes backwards.
        #expect(zip(run.records, run.records.dropFirst()).allSatisfy { $0.captureNs <= $1.captureNs })
    }

    @Test("a frame the driver flags as an error is kept, so frame numbers stay the video's index, and counted")
    func errorFlag() throws {
        let flagged = ScriptedCameraDriver.monotonic | UInt32(V4L2_BUF_FLAG_ERROR)
        let run = try Self.run([.frame(sequence: 0), .frame(sequence: 1, flags: flagged), .frame(sequence: 2)])
        #expect(run.records.map(\.sequence) == [0, 1, 2])
        #expect(run.records[1].flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0)
        #expect(run.camera.errorFlaggedFrames == 1)
    }

    @Test("no frame after all (EAGAIN) and calls a signal interrupted (EINTR) go on without a loss")
    func harmlessErrnos() throws {
        let run = try Self.run([
            .frame(sequence: 0), .dequeueFails(EAGAIN), .interruptWait, .interruptDequeue(sequence: 1),
            .frame(sequence: 2),
        ])
        #expect(run.error == nil)
        #expect(run.records.map(\.sequence) == [0, 1, 2])
        #expect(run.camera.sequenceGaps.count == 0)
    }

    @Test(
        "a device that went away ends the stream as gone, after the frames before it",
        arguments: [
            Step.dequeueFails(ENODEV), .dequeueFails(EIO), .pollEvents(Int16(POLLERR)), .pollEvents(Int16(POLLHUP)),
        ])
    func gone(_ step: Step) throws {
        let run = try Self.run([.frame(sequence: 0), .frame(sequence: 1), step], until: { _, finished in finished })
        let error = try #require(run.deviceError)
        #expect(error.code == .gone)
        #expect(error.device == Self.path)
        #expect(error.description.contains("unplugged"))
        #expect(run.records.map(\.sequence) == [0, 1])
        #expect(run.driver.streamOffs == 1)
    }

    @Test("buffers given back empty at an unplug are not frames: not written, given back, counted")
    func emptyBuffersAtAnUnplug() throws {
        let run = try Self.run(
            [
                .frame(sequence: 0), .frame(sequence: 1), .emptyBuffer(sequence: 2), .emptyBuffer(sequence: 3),
                .dequeueFails(ENODEV),
            ],
            until: { _, finished in finished })
        #expect(run.deviceError?.code == .gone)
        #expect(run.records.map(\.sequence) == [0, 1])
        #expect(run.camera.emptyBuffers == 2)
        #expect(run.camera.errorFlaggedFrames == 0)
        #expect(run.driver.handed.count == 4, "every buffer the driver handed out was seen")
    }

    @Test("EPIPE (after the driver's last buffer) and an unknown errno end the stream with what happened")
    func otherEnds() throws {
        let ended = try Self.run([.frame(sequence: 0), .dequeueFails(EPIPE)], until: { _, finished in finished })
        let end = try #require(ended.deviceError)
        #expect(end.code == .other && end.errno == EPIPE && end.hint.contains("last buffer"))
        let broken = try Self.run([.dequeueFails(EINVAL)], until: { _, finished in finished })
        let failure = try #require(broken.deviceError)
        #expect(failure.code == .other && failure.operation == "VIDIOC_DQBUF" && failure.errno == EINVAL)
    }

    @Test("each errno of a refused dequeue, classified")
    func dequeueErrnos() {
        #expect(V4L2Camera.streamEnd(dequeueFailed: .wouldBlock, device: "/dev/video0") == nil)
        #expect(V4L2Camera.streamEnd(dequeueFailed: .noDevice, device: "/dev/video0")?.code == .gone)
        #expect(V4L2Camera.streamEnd(dequeueFailed: .ioError, device: "/dev/video0")?.code == .gone)
        #expect(V4L2Camera.streamEnd(dequeueFailed: .brokenPipe, device: "/dev/video0")?.code == .other)
        #expect(V4L2Camera.streamEnd(dequeueFailed: Errno(EBUSY), device: "/dev/video0")?.code == .busy)
        #expect(V4L2Camera.streamEnd(queueFailed: .noDevice, device: "/dev/video0").code == .gone)
        #expect(V4L2Camera.streamEnd(queueFailed: .ioError, device: "/dev/video0").code == .gone)
        #expect(V4L2Camera.streamEnd(queueFailed: Errno(ENOMEM), device: "/dev/video0").code == .other)
    }

    @Test(
        "a buffer the driver refuses back ends the stream: gone for ENODEV and EIO, else the refusal",
        arguments: [(ENODEV, DeviceError.Code.gone), (EIO, .gone), (ENOMEM, .other)])
    func queueRefused(_ errno: Int32, _ code: DeviceError.Code) throws {
        let run = try Self.run(
            (0..<6).map { Step.frame(sequence: UInt32($0)) }, queueFailure: (afterFrames: 2, errno: errno),
            until: { _, finished in finished })
        let error = try #require(run.deviceError)
        #expect(error.code == code && error.operation == "VIDIOC_QBUF" && error.errno == errno, "\(error)")
        #expect(run.records.count >= 2, "the frames before the refusal are kept")
    }

    @Test("a storm of interrupted waits does not hide a stall: the watchdog runs between waits")
    func interruptsDoNotHideAStall() throws {
        // 2,000 interrupts a millisecond apart: retried inside the wait, they would hold the
        // loop for two seconds, twenty stall limits, before its watchdog looked.
        let script = [Step.frame(sequence: 0)] + Array(repeating: Step.interruptWait, count: 2_000)
        let run = try Self.run(script, stallTimeoutNs: 100_000_000, until: { _, finished in finished })
        let error = try #require(run.deviceError)
        #expect(error.code == .stalled)
        #expect(run.driver.remaining > 1_000, "the stall was seen while the interrupts went on")
    }

    @Test("a camera that sends nothing for its stall limit ends the stream as stalled")
    func stall() throws {
        let run = try Self.run([.frame(sequence: 0)], stallTimeoutNs: 100_000_000, until: { _, finished in finished })
        let error = try #require(run.deviceError)
        #expect(error.code == .stalled)
        #expect(run.records.count == 1)
    }

    @Test("with every buffer at the writer the camera has nowhere to put a frame: not a stall")
    func noStallWhileTheWriterHoldsEveryBuffer() throws {
        // The writer keeps all four buffers; the camera is then silent for five stall limits,
        // counted from its last frame.
        let run = try Self.run(
            (0..<4).map { Step.frame(sequence: UInt32($0)) }, stallTimeoutNs: 50_000_000, release: false,
            until: { driver, finished in
                guard !finished else { return true }
                let handed = driver.handed
                return handed.count == 4 && Int64(MonotonicClock.now()) - handed[3].rawNs > 250_000_000
            })
        #expect(run.error == nil)
        #expect(run.records.count == 4)
    }

    @Test("a frame that does not fit in the ring goes straight back to the driver, counted as dropped")
    func fullRing() throws {
        let run = try Self.run(
            (0..<5).map { Step.frame(sequence: UInt32($0)) }, ringCapacity: 2, release: false,
            readDuringRun: false)
        // The test reads the ring only after the stop: two fit, three were given back at once.
        #expect(run.records.map(\.sequence) == [0, 1])
        #expect(run.ring.drops.count == 3)
        #expect(run.ring.drops.droppedRuns == [2...4])
        #expect(run.driver.queueCalls == 4 + 3)
    }

    @Test(
        """
        a metadata node that stalls while the video flows: every frame keeps the kernel's time, \
        the stall is said once after 30 frames, and the node is drained at every frame and closed
        """)
    func stalledMetadataNode() throws {
        let driver: ScriptedCameraDriver
        do {
            let run = try Self.run(
                (0..<40).map { Step.frame(sequence: UInt32($0)) }, stamp: .exposureStart, metadataNode: true)
            driver = run.driver
            #expect(run.error == nil)
            #expect(run.records.count == 40)
            #expect(run.records.allSatisfy { $0.exposureStartNs == 0 && $0.exposureUncertaintyNs == 0 })
            // Stamped as the kernel's: each within its bound of the driver's time, mapped.
            for (record, handed) in zip(run.records, driver.handed) {
                #expect(abs(Int64(record.captureNs) - handed.rawNs) <= Int64(record.uncertaintyNs) + handed.rawWidthNs)
            }
            let notes = run.camera.metadataNotes
            let stalled = notes.filter { $0.contains("no metadata for 30 frames while the video flowed") }
            #expect(stalled.count == 1, "\(notes)")
            #expect(stalled.first?.hasPrefix(ScriptedCameraDriver.metadataPath) == true)
            #expect(driver.metadataOpens == 1)
            #expect(driver.metadataStreaming, "streamed beside the video")
            #expect(driver.metadataDequeues >= 40, "drained at every frame")
        }
        // The camera gone, its metadata node is stopped and closed with it.
        #expect(driver.metadataCloses == 1)
        #expect(!driver.metadataStreaming)
    }

    @Test("metadata that comes without the camera's clock (no PTS): the frames keep the kernel's time, said once")
    func metadataWithoutClock() throws {
        let run = try Self.run(
            (0..<40).map { Step.frame(sequence: UInt32($0)) }, stamp: .exposureStart, metadataNode: true,
            metadataWithoutClock: true)
        #expect(run.error == nil)
        #expect(run.records.count == 40)
        #expect(run.records.allSatisfy { $0.exposureStartNs == 0 })
        let notes = run.camera.metadataNotes
        #expect(notes.filter { $0.contains("no PTS in the metadata for 30 frames") }.count == 1, "\(notes)")
        #expect(!notes.contains { $0.contains("(stalled)") }, "buffers came: the node did not stall")
        #expect(run.camera.framesWithoutExposure == 40)
    }
}
