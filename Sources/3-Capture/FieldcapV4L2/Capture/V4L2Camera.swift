import CV4L2
import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A V4L2 camera as a capture source: mmap streaming buffers, stamped at dequeue, the kernel's
/// buffer timestamps mapped into `CLOCK_MONOTONIC_RAW`, frames handed to the writer in place.
///
/// The device is opened and its format, rate and buffers set up in `init`, so a problem is
/// reported before recording starts. `run` streams on the capture thread: wait (poll), `DQBUF`,
/// read `CLOCK_MONOTONIC_RAW` at once, push the buffer's index; the writer writes the frame from
/// the mmap'd buffer and calls `releaseBuffer`, which queues it again (`QBUF`). A frame that does
/// not fit in the ring is queued again at once and counted as dropped.
///
/// `capture_ns` is the buffer's kernel timestamp mapped into RAW when the driver stamps with
/// `CLOCK_MONOTONIC` and the time is plausible (not after the dequeue, not going backwards);
/// otherwise the dequeue time.
///
/// Threading: set up on the caller's thread; then `run` and everything it mutates (the clock
/// tracker, the counters, the held frame) belong to the capture thread, and `frameBytes` and
/// `releaseBuffer` to the writer, which reach the capture thread only through the ring, the
/// kernel's queue and the `requeueFailure` atomic. Counters and the report are read once the
/// capture thread has been joined.
public final class V4L2Camera: CaptureSource, @unchecked Sendable {
    /// What to ask the camera for. Every field has a default: 640x480, YUYV, 30 fps (or the
    /// highest rate the camera lists for them), 8 buffers, no controls, a 2 s stall limit.
    public struct Options: Sendable {
        /// Width and height to ask for; nil: 640x480.
        public var size: (width: Int, height: Int)?
        /// Frames per second to ask for; nil: 30 where the camera lists it for the format and
        /// size, else the highest it lists (`V4L2Device.defaultRate(for:)`).
        public var rate: Double?
        public var pixelFormat: VideoFormat.PixelFormat = .yuyv
        /// mmap buffers to request.
        public var bufferCount = 8
        /// Camera controls to set before streaming, by name (`fieldcap list` shows them).
        public var controls: [(name: String, value: Int64)] = []
        /// No frame for this long ends the stream.
        public var stallTimeoutNs: UInt64 = 2_000_000_000
        /// How to wait for the camera after an unplug and take it up again; nil: its stream ends.
        public var rejoin: RejoinPolicy?
        /// The metadata node beside a video node (a UVC camera's, with its payload headers), asked
        /// at setup and at every return; nil, or nil answered: none is read.
        public var metadataNode: (@Sendable (_ videoNode: String) -> String?)?
        /// Which instant `capture_ns` is.
        public var stamp: Stamp = .kernel

        public init(
            size: (width: Int, height: Int)? = nil, rate: Double? = nil, pixelFormat: VideoFormat.PixelFormat = .yuyv,
            bufferCount: Int = 8, controls: [(name: String, value: Int64)] = [], stallTimeoutNs: UInt64 = 2_000_000_000
        ) {
            self.size = size
            self.rate = rate
            self.pixelFormat = pixelFormat
            self.bufferCount = bufferCount
            self.controls = controls
            self.stallTimeoutNs = stallTimeoutNs
        }
    }

    /// Which instant a frame's `capture_ns` is.
    public enum Stamp: String, Sendable, CaseIterable {
        /// The kernel's timestamp, mapped (the dequeue time where it cannot be trusted).
        case kernel
        /// The camera's own start of exposure (a UVC camera's PTS through its metadata node);
        /// the kernel's timestamp for frames without one.
        case exposureStart = "exposure-start"
        /// The middle of the exposure: its start plus half the exposure time, which the camera
        /// must keep fixed (`exposure_time_absolute`, with any auto exposure off).
        case exposureMiddle = "exposure-middle"
        /// The moment fieldcap dequeued the frame (`CLOCK_MONOTONIC_RAW` read at once): what a
        /// recorder that trusts no driver's timestamp writes. Its bound is one frame period.
        case dequeue

        /// Whether the instant is the camera's own (from its metadata).
        public var isExposure: Bool { self == .exposureStart || self == .exposureMiddle }
    }

    public let descriptor: StreamDescriptor
    /// What the device granted (it may differ from what was asked).
    public let grantedFormat: VideoFormat
    public let grantedRate: Double
    /// Where the frame rate came from: asked for, fieldcap's default, or the camera's.
    public let rateChoice: V4L2Device.RateChoice
    /// The rate fieldcap asked for (nil: it kept the camera's), which the driver may have changed.
    public let askedRate: Double?
    /// `uncertainty_ns` of a frame stamped at dequeue: one frame period (30 fps when unknown).
    private var fallbackUncertaintyNs: UInt64 { UInt64(1e9 / (grantedRate > 0 ? grantedRate : 30)) }
    public let identity: V4L2Device.Identity
    /// Controls set at setup, with the values the driver reported back.
    public let appliedControls: [(name: String, asked: Int64, granted: Int64)]
    /// The open camera; replaced when it comes back after an unplug (capture thread, while the
    /// writer holds none of its buffers).
    private(set) var device: V4L2Device
    let calls: any DeviceCalls
    private let controls: [(name: String, value: Int64)]
    let rejoinPolicy: RejoinPolicy?
    /// The times the camera was away; nil when it is not taken up again after an unplug.
    public let presence: StreamPresence?
    /// The stream's sequence number of the first frame since the camera was (re)opened: the
    /// kernel's count starts again at a return, the stream's goes on. Capture-thread-bound.
    private var sequenceBase: UInt64 = 0
    /// The stream's sequence number the next frame would have without a gap.
    private var nextSequence: UInt64 = 0
    var buffers: [(start: UnsafeMutableRawPointer, length: Int)] = []
    /// The MONOTONIC→RAW mapping, fed a clock pair at every dequeue. Capture-thread-bound; read
    /// it (`clockTracker`) once the capture thread has been joined.
    private var tracker = ClockTracker()
    /// A clock pair read before streaming, so the first frame's interval has a start.
    private let setupPair = ClockPairReader.host(CLOCK_MONOTONIC).sample()

    /// `ns` of `CLOCK_MONOTONIC` in RAW with the pairs read so far (capture thread).
    func clockTrackerNow(_ ns: Int64) -> ClockTracker.Mapped? { tracker.mapNow(ns, handedOut: stamp.isExposure) }

    /// The MONOTONIC→RAW mapping as it stood at the end (drift, rate changes, the worst bound
    /// handed out), for the sidecar. Read after capture ended.
    public var clockTracker: ClockTracker { tracker }
    /// Frames the kernel skipped (sequence gaps), counted by the capture thread.
    public let sequenceGaps = DropCounter(runCapacity: 1024)
    public var deviceGaps: DropCounter? { sequenceGaps }
    public var clockHealth: ClockHealthBoard? { clockBoard }
    /// The MONOTONIC→RAW mapping's state for live viewers, offered at each dequeue.
    private let clockBoard = ClockHealthBoard(clock: CLOCK_MONOTONIC)
    /// Buffers whose frame is with the writer: pushed by the capture thread, back at `releaseBuffer`.
    private let buffersAtWriter = Atomic<Int>(0)
    /// Why a frame's kernel timestamp was not used, and it got its dequeue time instead.
    public enum DequeueFallback: Int, CaseIterable, Sendable {
        /// The driver does not stamp with CLOCK_MONOTONIC (`V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN` or
        /// `_COPY`).
        case notMonotonic
        /// The mapped time lies after the dequeue: the driver stamps the end of a frame it had not
        /// finished (vivid's default end-of-frame timestamps), or the wrong clock.
        case aheadOfDequeue
        /// The mapped time lies before the previous frame's.
        case backwards

        var reason: String {
            switch self {
            case .notMonotonic: "the driver's timestamps are not CLOCK_MONOTONIC"
            case .aheadOfDequeue:
                "the kernel time lay after the dequeue (an end-of-frame stamp ahead of the frame, or another clock)"
            case .backwards: "the kernel time went backwards"
            }
        }
    }
    /// Frames stamped at dequeue, by reason. Capture-thread-bound; read after capture ended.
    public private(set) var dequeueFallbacks = [Int](repeating: 0, count: DequeueFallback.allCases.count)
    /// Frames whose kernel timestamp was not used.
    public var untrustedTimestamps: Int { dequeueFallbacks.reduce(0, +) }
    /// Frames dequeued. Capture-thread-bound; read after capture ended.
    public private(set) var framesDequeued = 0
    /// The buffers' timestamp flags as the driver set them up (`VIDIOC_QUERYBUF`): which clock,
    /// start of exposure or end of frame.
    public let timestampFlags: UInt32
    /// Frames the driver marked `V4L2_BUF_FLAG_ERROR` (kept: the data may be corrupt).
    private(set) public var errorFlaggedFrames = 0
    /// Buffers the driver gave back with no data (not frames: not written).
    private(set) public var emptyBuffers = 0
    /// How long without a frame before the stream is declared stalled and ended.
    public let stallTimeoutNs: UInt64
    /// Set by the writer when the device refuses a buffer back (gone, or broken).
    private let requeueFailure = Atomic<Int32>(0)
    /// Which instant `capture_ns` is.
    public let stamp: Stamp
    /// `stamp=exposure-middle`: the exposure time read at setup (0 otherwise), and whether the
    /// camera chooses it (auto exposure): then it is followed twice a frame, else once a second.
    public let exposureTimeNs: UInt64
    let exposureIsAuto: Bool
    /// The exposure followed (`ExposureWatch`) in each stream so far, summed.
    var exposureFollowed = ExposureWatch.Figures()
    let metadataNode: (@Sendable (String) -> String?)?
    /// The camera's metadata node while it is read (capture thread once running).
    var metadata: UVCMetadataStream?
    /// What happened to the metadata node: why none is read, or why reading it stopped.
    var metadataNotes: [String] = []
    /// The metadata node's clock model as it stood when the node was last closed, for the report.
    var metadataHealth: UVCClockModel.Health?
    /// Frames stamped with their start of exposure, and frames that had none (`stamp=exposure-start`).
    public internal(set) var framesWithExposure = 0
    public internal(set) var framesWithoutExposure = 0
    /// Exposure-stamped frames whose start of exposure lay before the previous frame's stamp
    /// (a kernel time, later): stamped just after it, the bound widened.
    public internal(set) var framesHeldBack = 0

    /// Opens `path` through `calls` (libv4l2 unless a test plays the driver) and sets it up as
    /// `options` ask.
    ///
    /// - Throws: `DeviceError` naming the device, the step and what to do.
    public init(
        id: String, path: String, options: Options = Options(), calls: any DeviceCalls = LibV4L2Calls()
    ) throws(V4L2Error) {
        let (size, rate, pixelFormat) = (options.size, options.rate, options.pixelFormat)
        stallTimeoutNs = options.stallTimeoutNs
        self.calls = calls
        controls = options.controls
        rejoinPolicy = options.rejoin
        presence = options.rejoin == nil ? nil : StreamPresence()
        stamp = options.stamp
        metadataNode = options.metadataNode
        let device = try V4L2Device(path: path, calls: calls)
        self.device = device
        identity = device.identity
        grantedFormat = try device.setFormat(pixelFormat, size: size)
        // Asked for, or fieldcap's default; always set, then read back.
        let (defaultRate, defaultChoice) = rate == nil ? device.defaultRate(for: grantedFormat) : (nil, .asked)
        grantedRate = try device.setRate(rate ?? defaultRate)
        rateChoice = rate == nil ? defaultChoice : .asked
        askedRate = rate ?? defaultRate
        // Controls, before streaming.
        var applied: [(String, Int64, Int64)] = []
        for (name, value) in options.controls {
            applied.append((name, value, try device.setControl(name, to: value)))
        }
        appliedControls = applied
        (exposureTimeNs, exposureIsAuto) =
            options.stamp == .exposureMiddle ? try Self.exposureTime(of: device) : (0, false)
        let (stream, note) = Self.openMetadataStream(beside: path, finder: options.metadataNode, calls: calls)
        metadata = stream
        metadataNotes = note.map { [$0] } ?? []
        (buffers, timestampFlags) = try device.mapBuffers(count: options.bufferCount)
        // The shared buffers call back into the camera, weakly: the sink may keep them longer.
        let link = CameraLink()
        shared = SharedFrameBuffers(
            count: buffers.count, length: buffers.map(\.length).min() ?? 0,
            bytesPerLine: device.layout()?.bytesPerLine ?? 0, export: { link.camera?.exportBuffers() },
            giveBack: { index in link.camera?.requeue(index) })
        descriptor = StreamDescriptor(
            id: id, kind: .video, nominalRate: grantedRate, device: path, videoFormat: grantedFormat,
            frameBuffers: buffers.count, sharedBuffers: shared)
        link.camera = self
    }

    deinit {
        metadata?.close()
        for descriptor in shared.exportedDescriptors ?? [] { close(descriptor) }
        for buffer in buffers { device.node.munmap(buffer.start, length: buffer.length) }
    }

    /// The camera's buffers as a device may read them in place (`descriptor.sharedBuffers`).
    let shared: SharedFrameBuffers

    /// Set once, in `init`, before any other thread sees the camera.
    final class CameraLink: @unchecked Sendable {
        weak var camera: V4L2Camera?
    }

    /// The buffers as DMABUF descriptors, when frames lie in them as fieldcap writes them (lines
    /// packed, NV12's chroma right after its luma), so that reading one in place is reading the
    /// frame a copy would give; nil otherwise, or when the driver cannot export.
    private func exportBuffers() -> [Int32]? {
        guard let packedLine = grantedFormat.pixelFormat.lineBytes(width: grantedFormat.width),
            shared.bytesPerLine == packedLine
        else { return nil }
        return device.exportBuffers(count: buffers.count)
    }

    private func queue(_ index: Int32) -> Errno? {
        var buffer = V4L2Device.buffer(UInt32(index))
        return device.node.ioctl(CV4L2_VIDIOC_QBUF(), &buffer)
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        var rejoining = RejoinLoop(policy: rejoinPolicy, presence: presence)
        try rejoining.run(
            stream: { try stream(into: ring, stop: stop, first: presence?.absences.isEmpty ?? true) },
            takeUpAgain: { policy, presence in try takeUpAgain(policy, presence: presence, stop: stop) })
    }

    /// The camera went away: wait until the writer has given back every buffer (it still writes
    /// the frames the ring holds), let the old device go, wait for the same camera, and take it
    /// up with the format, rate, controls and buffers it had. False when stopped while away.
    ///
    /// - Throws: `DeviceError` when the camera came back and cannot be taken up as it was.
    private func takeUpAgain(_ policy: RejoinPolicy, presence: StreamPresence, stop: StopSignal) throws -> Bool {
        let old = device
        // An encoder reading the buffers in place (DMABUF) keeps the old ones: a new camera's
        // buffers cannot take their place under it.
        if shared.isReadInPlace {
            let reason = "its encoder reads the camera's buffers in place, which do not survive an unplug"
            presence.gaveUp(reason: reason)
            throw DeviceError(code: .gone, device: old.path, operation: "rejoin", hint: reason)
        }
        // Acquiring: the writer's last use of a buffer (and of the old device) happens before.
        while buffersAtWriter.load(ordering: .acquiring) > 0 {
            if stop.wait(milliseconds: 5) { return false }
        }
        for buffer in buffers { old.node.munmap(buffer.start, length: buffer.length) }
        buffers = []
        old.close()
        // Looked for again at the return, a while, when the camera had one.
        let hadMetadata = metadata != nil || metadataHealth != nil
        closeMetadata()
        // Since when the camera is listed and opens but cannot be set up (a USB device still
        // enumerating, udev not yet done with its node's permissions): tried again for a while.
        var failingSince: UInt64?
        while let node = policy.waitForDevice(stop, { presence.note($0) }) {
            do {
                let camera = try V4L2Device(path: node, calls: calls)
                let (stream, note) = Self.openMetadataStream(
                    beside: node, finder: metadataNode, calls: calls, waitMs: hadMetadata ? 2000 : 0, stop: stop)
                if let note { presence.note(note) }
                do { try setUp(camera, as: node) } catch {
                    stream?.close()
                    camera.close()
                    throw error
                }
                metadata = stream
                if camera.identity.bus != identity.bus {
                    presence.note("\(node) is the camera back on \(camera.identity.bus), not \(identity.bus)")
                }
                device = camera
                requeueFailure.store(0, ordering: .relaxed)
                sequenceBase = nextSequence
                presence.returned(atNs: MonotonicClock.now(), as: node)
                return true
            } catch let error as DeviceError where error.operation == "rejoin" {
                // Another camera, or this one with other modes: final.
                presence.refused(as: node, reason: error.hint.isEmpty ? "\(error)" : error.hint)
                throw error
            } catch let error as DeviceError {
                // A node that is listed but not back: the one the driver had not yet taken away,
                // one gone again at once, or a node its driver keeps while refusing it (vivid's
                // "Disconnect" leaves it in sysfs and answers ENODEV). The wait would find it
                // again at once: look again after a pause, not in a spin.
                if error.code == .gone || error.code == .notFound {
                    // Gone again: its next return is a new chance.
                    failingSince = nil
                } else {
                    // Said in the sidecar (each error once): what held up a camera that was back.
                    presence.note("\(node) was listed but not ready: \(error)")
                    let now = MonotonicClock.now()
                    let since = failingSince ?? now
                    failingSince = since
                    if now - since > Self.notReadyLimitNs {
                        let seconds = Self.notReadyLimitNs / 1_000_000_000
                        presence.refused(
                            as: node, reason: "it came back and could not be set up for \(seconds) s: \(error)")
                        throw error
                    }
                }
                if stop.wait(milliseconds: Self.notBackPauseMs) { return false }
            }
        }
        return false
    }

    /// How long to wait before looking again for a camera whose node is listed but refuses to
    /// open: short against a replug's seconds, long against a spin.
    static let notBackPauseMs: Int32 = 100
    /// How long a camera that is back but cannot be set up is tried again before it is refused.
    /// 30 s: uvcvideo waits 5 s for each control request a camera does not answer.
    static let notReadyLimitNs: UInt64 = 30_000_000_000

    /// Sets up the camera that came back as `node` as the stream had it: the same driver, card
    /// and bus, format, rate and buffers, and the controls set again.
    private func setUp(_ camera: V4L2Device, as node: String) throws {
        func refuse(_ what: String) -> DeviceError {
            DeviceError(code: .unsupported, device: node, operation: "rejoin", hint: "\(what): not taken up again")
        }
        do { try setUpAsBefore(camera, refuse) } catch let error as DeviceError where error.code != .gone {
            // Its own words (the size the driver granted, the control it refused), as a refusal
            // to take it up: "pick a size `fieldcap list` shows" is setup's advice, not rejoin's.
            throw error.operation == "rejoin" ? error : refuse("it came back and \(error.operation) failed: \(error)")
        }
    }

    private func setUpAsBefore(_ camera: V4L2Device, _ refuse: (String) -> DeviceError) throws {
        let was = identity
        // Its bus may differ: a camera named by its serial is taken up in another port.
        guard camera.identity.driver == was.driver, camera.identity.card == was.card else {
            throw refuse(
                "another camera came back: \(camera.identity.card) (\(camera.identity.driver), "
                    + "\(camera.identity.bus)), not \(was.card) (\(was.driver), \(was.bus))")
        }
        let format = try camera.setFormat(grantedFormat.pixelFormat, size: (grantedFormat.width, grantedFormat.height))
        guard format == grantedFormat else {
            throw refuse("it came back offering \(format), not \(grantedFormat)")
        }
        let rate = try camera.setRate(grantedRate)
        guard abs(rate - grantedRate) < 0.01 else {
            throw refuse(
                "it came back at \(SourceReport.rate(rate)) fps, not \(SourceReport.rate(grantedRate))")
        }
        for (name, value) in controls { _ = try camera.setControl(name, to: value) }
        let (mapped, _) = try camera.mapBuffers(count: shared.count)
        guard mapped.count == shared.count, mapped.allSatisfy({ $0.length >= shared.length }) else {
            for buffer in mapped { camera.node.munmap(buffer.start, length: buffer.length) }
            throw refuse(
                "it came back with \(mapped.count) buffers of \(mapped.map(\.length).min() ?? 0) bytes, "
                    + "not \(shared.count) of \(shared.length)")
        }
        buffers = mapped
    }

    /// Streams from the open camera until a stop, or until it fails. `first`: the first time.
    private func stream(into ring: SPSCRing<CaptureRecord>, stop: StopSignal, first: Bool) throws {
        let node = device.node
        for index in buffers.indices {
            if let error = queue(Int32(index)) {
                throw V4L2Error.ioctl("VIDIOC_QBUF", device: device.path, errno: error.rawValue)
            }
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        startMetadata()
        // The exposure time's first reading before the first frame's start.
        let watch = startExposureWatch()
        defer { stopExposureWatch(watch) }
        try device.call("VIDIOC_STREAMON", CV4L2_VIDIOC_STREAMON(), &type)
        defer { _ = node.ioctl(CV4L2_VIDIOC_STREAMOFF(), &type) }

        // Every dequeue reads a clock pair a few ms after the kernel stamped the frame, so a
        // change of CLOCK_MONOTONIC's rate (an NTP update) is seen at the next frame. A frame
        // stamped inside the interval of such a change waits for the pair after it (`held`):
        // only then is it known on which side of the change the frame lies.
        if first { tracker.add(setupPair) }
        tracker.add(
            ClockPairReader.hostSample(CLOCK_MONOTONIC, after: Int64(MonotonicClock.now()), burst: Self.pairBurst))
        var record = CaptureRecord()
        var held: CaptureRecord?
        /// A frame stamped at the middle of its exposure, waiting for a reading of the exposure
        /// time after its start (`ExposureWatch`): until the next frame at most.
        var awaitingExposure: CaptureRecord?
        defer {
            // The stream ends: a frame still waiting takes the bound that covers the change.
            if var last = held, let mapped = tracker.mapNow(last.deviceNs) { pushMapped(&last, mapped, into: ring) }
            if var last = awaitingExposure { pushExposureStamped(&last, watch: watch, into: ring) }
        }
        var firstSequence: UInt32?
        var lastSequence: UInt32 = 0
        if first { lastCapture = 0 }
        var lastFrame = MonotonicClock.now()
        while !stop.isRequested {
            let failure = requeueFailure.load(ordering: .relaxed)
            if failure != 0 { throw Self.streamEnd(queueFailed: Errno(failure), device: device.path) }
            if MonotonicClock.now() &- lastFrame > stallTimeoutNs {
                // With every buffer at the writer or held for the next clock pair (a disk slower
                // than the video, or stalled), the camera has nowhere to put a frame: it skips
                // them (sequence gaps), it has not stalled.
                let waiting = (held != nil ? 1 : 0) + (awaitingExposure != nil ? 1 : 0)
                if buffersAtWriter.load(ordering: .relaxed) + waiting >= buffers.count {
                    lastFrame = MonotonicClock.now()
                } else {
                    throw DeviceError.stalled(device: device.path, timeoutNs: stallTimeoutNs, what: "frame")
                }
            }
            // The camera and the stop signal's pipe: a stop wakes the wait at once. poll(2) rather
            // than epoll: it asks the driver at every wait, so a device that went away without
            // waking its queue is still seen (POLLERR, POLLHUP) within one timeout.
            // An interrupted wait goes back to the stall watchdog above, not into a new 200 ms.
            let cameraEvents: Int16
            switch node.poll(
                events: Int16(POLLIN), orReadable: stop.wakeDescriptor, timeoutMs: 200, retryOnInterrupt: false)
            {
            case .success(let ready): cameraEvents = ready.node
            case .failure(.interrupted): continue
            case .failure(let error): throw V4L2Error.ioctl("poll", device: device.path, errno: error.rawValue)
            }
            if cameraEvents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                throw DeviceError.gone("poll", device: device.path, errno: .noDevice)
            }
            if cameraEvents & Int16(POLLIN) == 0 { continue }
            // One buffer per wake-up: when another is done too, the wait returns at once, and when
            // none is, it sleeps without the DQBUF that would say EAGAIN.
            var buffer = V4L2Device.buffer(0)
            if let error = node.ioctl(CV4L2_VIDIOC_DQBUF(), &buffer) {
                guard let failure = Self.streamEnd(dequeueFailed: error, device: device.path) else { continue }
                throw failure
            }
            // A buffer with no data holds no frame: uvcvideo hands every queued buffer back empty
            // (and flagged ERROR) as its camera is unplugged. Given back, not written, counted.
            if buffer.bytesused == 0 {
                emptyBuffers += 1
                if let refused = queue(Int32(buffer.index)) {
                    throw Self.streamEnd(queueFailed: refused, device: device.path)
                }
                continue
            }
            let dequeued = MonotonicClock.now()
            lastFrame = dequeued
            framesDequeued += 1
            // A pair too wide to use (the thread was preempted between the reads) is read again:
            // without one, the frame's time lies past the latest pair, where any rate could hold.
            var paired = tracker.add(
                ClockPairReader.hostSample(CLOCK_MONOTONIC, after: Int64(dequeued), burst: Self.pairBurst))
            for _ in 0..<3 where !paired {
                paired = tracker.add(
                    ClockPairReader.hostSample(
                        CLOCK_MONOTONIC, after: Int64(MonotonicClock.now()), burst: Self.pairBurst))
            }
            clockBoard.offer(tracker, nowNs: dequeued)
            if var waiting = held, case .mapped(let mapped)? = tracker.map(waiting.deviceNs) {
                held = nil
                pushMapped(&waiting, mapped, into: ring)
            }
            let kernelNs = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
            // Sequence gaps are frames the kernel lost.
            if let first = firstSequence {
                let missing = buffer.sequence &- lastSequence &- 1
                if missing > 0 && missing < 1_000_000 {
                    sequenceGaps.record(from: sequenceBase + UInt64(lastSequence &- first) + 1, count: Int(missing))
                }
            } else {
                firstSequence = buffer.sequence
            }
            lastSequence = buffer.sequence
            record.sequence = sequenceBase + UInt64(buffer.sequence &- firstSequence!)
            nextSequence = record.sequence + 1
            record.dequeueNs = dequeued
            record.bufferIndex = Int32(buffer.index)
            record.bytesUsed = buffer.bytesused
            record.deviceNs = kernelNs
            record.flags = buffer.flags
            // V4L2 says an ERROR buffer may hold corrupt data, and streaming goes on: the frame
            // is kept (so frame_number stays the index in the video) and counted.
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { errorFlaggedFrames += 1 }
            readExposure(into: &record, sequence: buffer.sequence)
            // A frame waiting for its exposure time's readings goes before this one, with what
            // the watch has read by now.
            if var waiting = awaitingExposure {
                awaitingExposure = nil
                pushExposureStamped(&waiting, watch: watch, into: ring)
            }
            if stamp == .dequeue {
                if var waiting = held, let mapped = tracker.mapNow(waiting.deviceNs) {
                    held = nil
                    pushMapped(&waiting, mapped, into: ring)
                }
                record.captureNs = max(record.dequeueNs, lastCapture)
                record.uncertaintyNs = fallbackUncertaintyNs
                push(record, into: ring)
                continue
            }
            if stamp.isExposure {
                if record.exposureStartNs != 0 && record.exposureStartNs <= record.dequeueNs {
                    // A frame waiting for its clock pair goes first, with the bound it has.
                    if var waiting = held, let mapped = tracker.mapNow(waiting.deviceNs) {
                        held = nil
                        pushMapped(&waiting, mapped, into: ring)
                    }
                    // The middle needs the exposure time the camera had as the frame began: a frame
                    // the watch has not read past yet waits for the next frame (one at most).
                    if let watch, watch.isAuto, !watch.hasReading(after: record.exposureStartNs) {
                        awaitingExposure = record
                        continue
                    }
                    pushExposureStamped(&record, watch: watch, into: ring)
                    continue
                }
                framesWithoutExposure += 1
            }
            let monotonic =
                buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            guard monotonic else {
                stampAtDequeue(&record, .notMonotonic, into: ring)
                continue
            }
            switch tracker.map(kernelNs) {
            case .mapped(let mapped)?:
                pushMapped(&record, mapped, into: ring)
            case .pending?:
                // One frame waits at most: a second in the same state (the pair after the change
                // was refused) sends the first on with the wider bound.
                if var waiting = held, let mapped = tracker.mapNow(waiting.deviceNs) {
                    pushMapped(&waiting, mapped, into: ring)
                }
                held = record
            case .ambiguous(_, let after)?:
                // CLOCK_MONOTONIC is never set; should a kernel ever do it, the later side.
                pushMapped(&record, after, into: ring)
            case nil:
                stampAtDequeue(&record, .notMonotonic, into: ring)
            }
        }
    }

    /// What a refused `VIDIOC_QBUF` means: as a dequeue's error, the device gone for ENODEV and
    /// EIO, else the refusal as it was.
    static func streamEnd(queueFailed error: Errno, device: String) -> DeviceError {
        error == .ioError
            ? .gone("VIDIOC_QBUF", device: device, errno: error)
            : .ioctl("VIDIOC_QBUF", device: device, errno: error.rawValue)
    }

    /// What a refused `VIDIOC_DQBUF` means: nil when there was no frame after all (EAGAIN: the
    /// wait and the dequeue raced another reader of the queue), else the error that ends the
    /// stream. ENODEV is a device unplugged or unbound; EIO is what vb2 answers once a driver
    /// has declared its queue broken, which uvcvideo does when the camera is disconnected; EPIPE
    /// follows a buffer the driver flagged as its last.
    static func streamEnd(dequeueFailed error: Errno, device: String) -> DeviceError? {
        switch error {
        case .wouldBlock:
            return nil
        case .noDevice, .ioError:
            return .gone("VIDIOC_DQBUF", device: device, errno: error)
        case .brokenPipe:
            return DeviceError(
                code: .other, device: device, operation: "VIDIOC_DQBUF", errno: error.rawValue,
                hint: "the driver ended the stream (it flagged its last buffer)")
        default:
            return .ioctl("VIDIOC_DQBUF", device: device, errno: error.rawValue)
        }
    }

    /// Brackets per dequeue's clock pair, chained (`ClockPairReader.hostSample`): six clock reads,
    /// about 0.2 µs on the development VM, and the first one after the dequeue ioctl is often slow
    /// under emulation (in the kernel rig the narrowest of three was 0.66 µs wide at the median).
    static let pairBurst = 3

    /// The last `capture_ns` pushed: kernel times must not go backwards.
    private var lastCapture: UInt64 = 0

    /// Pushes a frame with its kernel time mapped into RAW, if that time is plausible: not after
    /// the dequeue (a driver stamping the end of a frame it has not finished, or a wrong clock)
    /// and not before the previous frame's. Otherwise the dequeue time. Capture-thread-bound.
    @inline(__always)
    private func pushMapped(
        _ record: inout CaptureRecord, _ mapped: ClockTracker.Mapped, into ring: SPSCRing<CaptureRecord>
    ) {
        guard mapped.rawNs > 0, UInt64(mapped.rawNs) <= record.dequeueNs else {
            stampAtDequeue(&record, .aheadOfDequeue, into: ring)
            return
        }
        guard UInt64(mapped.rawNs) >= lastCapture else {
            stampAtDequeue(&record, .backwards, into: ring)
            return
        }
        record.captureNs = UInt64(mapped.rawNs)
        // timeval truncates the kernel's time to a microsecond; the mapping adds its own bound.
        record.uncertaintyNs = 1_000 + UInt64(mapped.uncertaintyNs)
        push(record, into: ring)
    }

    /// Pushes a frame stamped at its exposure start or middle. Frames stamped with the kernel's
    /// later instant (before the model could map, or without metadata) may lie after this
    /// exposure start: capture_ns never goes back, so this frame takes the next nanosecond, its
    /// bound widened to reach its instant (`framesHeldBack`); the stamps catch up within a few
    /// frames. The middle: half the exposure time the camera had as the frame began (followed:
    /// between the readings around its start, half their spread added to its bound).
    private func pushExposureStamped(
        _ record: inout CaptureRecord, watch: ExposureWatch?, into ring: SPSCRing<CaptureRecord>
    ) {
        framesWithExposure += 1
        var exposure = (timeNs: exposureTimeNs, halfSpreadNs: UInt64(0))
        if let watch { exposure = watch.exposure(startingAt: record.exposureStartNs) }
        if stamp != .exposureMiddle { exposure = (0, 0) }
        record.exposureTimeNs = exposure.timeNs
        let instant = record.exposureStartNs + exposure.timeNs / 2
        let earliest = lastCapture + 1
        record.captureNs = max(instant, earliest)
        record.uncertaintyNs =
            record.exposureUncertaintyNs + (record.captureNs - instant)
            + (exposure.timeNs > 0 ? Self.exposureStepNs / 2 + exposure.halfSpreadNs / 2 : 0)
        if record.captureNs > instant { framesHeldBack += 1 }
        push(record, into: ring)
    }

    /// A dequeue time says only that the frame was done by then: one frame period is the honest
    /// bound while the capture keeps up (the frames log shows when it did not).
    @inline(__always)
    private func stampAtDequeue(
        _ record: inout CaptureRecord, _ reason: DequeueFallback, into ring: SPSCRing<CaptureRecord>
    ) {
        dequeueFallbacks[reason.rawValue] += 1
        record.captureNs = max(record.dequeueNs, lastCapture)
        record.uncertaintyNs = fallbackUncertaintyNs
        push(record, into: ring)
    }

    @inline(__always)
    private func push(_ record: CaptureRecord, into ring: SPSCRing<CaptureRecord>) {
        lastCapture = record.captureNs
        // Before the push: once in the ring, the writer may release it at once.
        shared.lend(record.bufferIndex)
        if ring.push(record, sequence: record.sequence) {
            buffersAtWriter.add(1, ordering: .relaxed)
        } else {
            _ = queue(record.bufferIndex)
        }
    }

    public func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? {
        guard record.bufferIndex >= 0, Int(record.bufferIndex) < buffers.count else { return nil }
        return UnsafeRawBufferPointer(start: buffers[Int(record.bufferIndex)].start, count: Int(record.bytesUsed))
    }

    /// The writer is done with the buffer: back to the camera, unless a device that reads it
    /// in place (an encoder importing it) still holds it, in which case its last release does.
    public func releaseBuffer(_ index: Int32) {
        shared.release(index)
    }

    /// Gives buffer `index` back to the driver, from whichever thread released it last.
    func requeue(_ index: Int32) {
        // QBUF from the writer's or an encoder's thread: the kernel's vb2 queue takes its own
        // lock. A refusal ends the stream (the capture thread sees it); after a stop it does not
        // matter.
        if let error = queue(index), error.rawValue != EINVAL {
            requeueFailure.store(error.rawValue, ordering: .relaxed)
        }
        // After the queue call, releasing: a camera that lost its device replaces it (and the
        // buffers) once none is at the writer.
        buffersAtWriter.subtract(1, ordering: .releasing)
    }
}
