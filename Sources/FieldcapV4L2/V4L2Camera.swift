import CV4L2
import FieldcapCore
import Synchronization
import SyncField

#if canImport(Glibc)
import Glibc
#endif

/// A V4L2 camera as a capture source: mmap streaming buffers, stamped at dequeue, the kernel's
/// buffer timestamps mapped into `CLOCK_MONOTONIC_RAW`, frames handed to the writer in place.
///
/// The device is opened and its format, rate and buffers set up in `init`, so a problem is
/// reported before recording starts. `run` streams on the capture thread: wait (epoll), `DQBUF`,
/// read `CLOCK_MONOTONIC_RAW` at once, push the buffer's index; the writer writes the frame from
/// the mmap'd buffer and calls `releaseBuffer`, which queues it again (`QBUF`). A frame that does
/// not fit in the ring is queued again at once and counted as dropped.
///
/// `capture_ns` is the buffer's kernel timestamp mapped into RAW when the driver stamps with
/// `CLOCK_MONOTONIC` and the time is plausible (not after the dequeue, not going backwards);
/// otherwise the dequeue time.
public final class V4L2Camera: CaptureSource, @unchecked Sendable {
    public let descriptor: StreamDescriptor
    /// What the device granted (it may differ from what was asked).
    public let grantedFormat: VideoFormat
    public let grantedRate: Double
    /// `uncertainty_ns` of a frame stamped at dequeue: one frame period (30 fps when unknown).
    private var fallbackUncertaintyNs: UInt64 { UInt64(1e9 / (grantedRate > 0 ? grantedRate : 30)) }
    public let identity: V4L2Device.Identity
    /// Controls set at setup, with the values the driver reported back.
    public let appliedControls: [(name: String, asked: Int64, granted: Int64)]
    private let device: V4L2Device
    private var buffers: [(start: UnsafeMutableRawPointer, length: Int)] = []
    private let mapping = ClockMapping()

    /// The MONOTONIC→RAW mapping as it stood at the end (bracket width, drift), for the sidecar.
    public var clockMapping: ClockMapping.Snapshot? { mapping.snapshot }
    /// Frames the kernel skipped (sequence gaps), counted by the capture thread.
    public let sequenceGaps = DropCounter()
    public var deviceGaps: DropCounter? { sequenceGaps }
    /// Buffers whose frame is with the writer: pushed by the capture thread, back at `releaseBuffer`.
    private let buffersAtWriter = Atomic<Int>(0)
    /// Frames whose kernel timestamp was not used (untrusted clock or implausible time).
    private(set) public var untrustedTimestamps = 0
    /// Frames the driver marked `V4L2_BUF_FLAG_ERROR` (kept: the data may be corrupt).
    private(set) public var errorFlaggedFrames = 0
    /// How long without a frame before the stream is declared stalled and ended.
    public var stallTimeoutNs: UInt64 = 2_000_000_000
    /// Set by the writer when the device refuses a buffer back (gone, or broken).
    private let requeueFailure = Atomic<Int32>(0)

    /// Opens `path` and sets it up.
    ///
    /// - Parameters:
    ///   - size: width and height to ask for (nil: the device's current size).
    ///   - rate: frames per second to ask for (nil: the device's current rate).
    ///   - pixelFormat: the format to ask for (default YUYV).
    ///   - bufferCount: mmap buffers to request.
    ///   - controls: camera controls to set before streaming, by name (`fieldcap list` shows them).
    public init(
        id: String, path: String, size: (width: Int, height: Int)?, rate: Double?,
        pixelFormat: VideoFormat.PixelFormat = .yuyv, bufferCount: Int = 8, controls: [(String, Int64)] = []
    ) throws(V4L2Error) {
        let device = try V4L2Device(path: path)
        self.device = device
        identity = device.identity
        let fd = device.fd

        // The format: ask, then take what the driver granted.
        let fourcc = Self.fourcc(pixelFormat)
        let offered = device.pixelFormatCodes()
        guard offered.contains(pixelFormat.rawValue == "MJPG" ? "MJPG" : pixelFormat.rawValue) else {
            throw V4L2Error(code: .other, device: path, operation: "VIDIOC_S_FMT", errno: 0,
                            hint: "the camera has no \(pixelFormat.rawValue); it offers \(offered.joined(separator: ", ")) (`fieldcap list`)")
        }
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.pixelformat = fourcc
        format.fmt.pix.width = UInt32(size?.width ?? 640)
        format.fmt.pix.height = UInt32(size?.height ?? 480)
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        guard V4L2Device.ioctl(fd, CV4L2_VIDIOC_S_FMT(), &format) == 0 else {
            throw .ioctl("VIDIOC_S_FMT", device: path, errno: errno)
        }
        guard format.fmt.pix.pixelformat == fourcc else {
            throw V4L2Error(code: .other, device: path, operation: "VIDIOC_S_FMT", errno: 0,
                            hint: "the driver would not use \(pixelFormat.rawValue)")
        }
        grantedFormat = VideoFormat(width: Int(format.fmt.pix.width), height: Int(format.fmt.pix.height), pixelFormat: pixelFormat)
        if let size, size.width != grantedFormat.width || size.height != grantedFormat.height {
            throw V4L2Error(code: .other, device: path, operation: "VIDIOC_S_FMT", errno: 0,
                            hint: "asked for \(size.width)x\(size.height), the driver granted \(grantedFormat.width)x\(grantedFormat.height); pick a size `fieldcap list` shows")
        }

        // The rate.
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        if let rate {
            parameters.parm.capture.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((rate * 1000).rounded()))
            guard V4L2Device.ioctl(fd, CV4L2_VIDIOC_S_PARM(), &parameters) == 0 else {
                throw .ioctl("VIDIOC_S_PARM", device: path, errno: errno)
            }
        } else if V4L2Device.ioctl(fd, CV4L2_VIDIOC_G_PARM(), &parameters) != 0 {
            throw .ioctl("VIDIOC_G_PARM", device: path, errno: errno)
        }
        let frame = parameters.parm.capture.timeperframe
        grantedRate = frame.numerator > 0 ? Double(frame.denominator) / Double(frame.numerator) : (rate ?? 0)

        // Controls, before streaming.
        var applied: [(String, Int64, Int64)] = []
        for (name, value) in controls {
            applied.append((name, value, try device.setControl(name, to: value)))
        }
        appliedControls = applied

        // The buffers.
        var request = v4l2_requestbuffers()
        request.count = UInt32(bufferCount)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard V4L2Device.ioctl(fd, CV4L2_VIDIOC_REQBUFS(), &request) == 0, request.count > 0 else {
            throw .ioctl("VIDIOC_REQBUFS", device: path, errno: errno)
        }
        for index in 0..<request.count {
            var buffer = Self.buffer(index)
            guard V4L2Device.ioctl(fd, CV4L2_VIDIOC_QUERYBUF(), &buffer) == 0 else {
                throw .ioctl("VIDIOC_QUERYBUF", device: path, errno: errno)
            }
            guard let start = CV4L2_mmap(fd, Int(buffer.length), Int64(buffer.m.offset)),
                start != UnsafeMutableRawPointer(bitPattern: -1)
            else { throw V4L2Error(code: .other, device: path, operation: "mmap", errno: errno, hint: "") }
            buffers.append((start, Int(buffer.length)))
        }
        descriptor = StreamDescriptor(
            id: id, kind: .video, nominalRate: grantedRate, device: path, videoFormat: grantedFormat,
            frameBuffers: buffers.count)
    }

    deinit {
        for buffer in buffers { _ = CV4L2_munmap(buffer.start, buffer.length) }
    }

    static func fourcc(_ format: VideoFormat.PixelFormat) -> UInt32 {
        let text = Array(format.rawValue.utf8) + [UInt8](repeating: 0x20, count: 4)
        return UInt32(text[0]) | UInt32(text[1]) << 8 | UInt32(text[2]) << 16 | UInt32(text[3]) << 24
    }

    static func buffer(_ index: UInt32) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    private func queue(_ index: Int32) -> Int32 {
        var buffer = Self.buffer(UInt32(index))
        return V4L2Device.ioctl(device.fd, CV4L2_VIDIOC_QBUF(), &buffer)
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        let fd = device.fd
        for index in buffers.indices where queue(Int32(index)) != 0 {
            throw V4L2Error.ioctl("VIDIOC_QBUF", device: device.path, errno: errno)
        }
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        guard V4L2Device.ioctl(fd, CV4L2_VIDIOC_STREAMON(), &type) == 0 else {
            throw V4L2Error.ioctl("VIDIOC_STREAMON", device: device.path, errno: errno)
        }
        defer { _ = V4L2Device.ioctl(fd, CV4L2_VIDIOC_STREAMOFF(), &type) }

        // The MONOTONIC→RAW mapping is sampled off this thread, about once a second.
        let reader = ClockPairReader.host(CLOCK_MONOTONIC)
        mapping.add(reader.sample())
        // It ends with this loop, not with the recording: a camera that fails ends its stream (and
        // reports why, and when) at once, while the other streams go on.
        let captureEnded = Latch()
        let sampler = DedicatedThread(name: "fc-clk-\(descriptor.id)") { [mapping] in
            // The second pair comes 100 ms after the first: until there are two, the mapping
            // has an offset but no rate, and a slewed clock's error grows with every frame.
            var interval: Int32 = 100
            while !captureEnded.wait(milliseconds: interval) {
                mapping.add(reader.sample())
                interval = 1000
            }
        }
        defer {
            captureEnded.open()
            sampler.join()
        }

        var record = CaptureRecord()
        var firstSequence: UInt32?
        var lastSequence: UInt32 = 0
        var lastCapture: UInt64 = 0
        // The camera and the stop signal's pipe, registered once: a stop wakes the wait at once.
        let waitSet = CV4L2_wait_set_create()
        guard waitSet >= 0 else { throw V4L2Error.ioctl("epoll_create1", device: device.path, errno: errno) }
        defer { close(waitSet) }
        let cameraBit: UInt32 = 1
        guard CV4L2_wait_set_add(waitSet, fd, cameraBit) == 0, CV4L2_wait_set_add(waitSet, stop.wakeDescriptor, 2) == 0 else {
            throw V4L2Error.ioctl("epoll_ctl", device: device.path, errno: errno)
        }
        var lastFrame = MonotonicClock.now()
        while !stop.isRequested {
            let failure = requeueFailure.load(ordering: .relaxed)
            if failure != 0 { throw V4L2Error.ioctl("VIDIOC_QBUF", device: device.path, errno: failure) }
            if MonotonicClock.now() &- lastFrame > stallTimeoutNs {
                // With every buffer at the writer (a disk slower than the video, or stalled), the
                // camera has nowhere to put a frame: it skips them (sequence gaps), it has not stalled.
                if buffersAtWriter.load(ordering: .relaxed) >= buffers.count {
                    lastFrame = MonotonicClock.now()
                } else {
                    throw V4L2Error(code: .gone, device: device.path, operation: "capture", errno: 0,
                                    hint: "no frame for \(stallTimeoutNs / 1_000_000) ms: the camera stalled or was disconnected")
                }
            }
            var ready: UInt32 = 0
            var failed: UInt32 = 0
            let count = CV4L2_wait_set_wait(waitSet, 200, &ready, &failed)
            if count < 0 {
                if errno == EINTR { continue }
                throw V4L2Error.ioctl("epoll_wait", device: device.path, errno: errno)
            }
            // epoll looks at the camera again only when its driver wakes the queue, which a driver
            // going away normally does; a quiet 200 ms asks the device directly, in case it did not.
            if count == 0 {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 0) > 0 && poller.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { failed = cameraBit }
            }
            if failed & cameraBit != 0 {
                throw V4L2Error(code: .gone, device: device.path, operation: "poll", errno: ENODEV, hint: "the camera stopped (unplugged?)")
            }
            if ready & cameraBit == 0 { continue }
            // One buffer per wake-up: when another is done too, the level-triggered wait returns
            // at once, and when none is, it sleeps without the DQBUF that would say EAGAIN.
            var buffer = Self.buffer(0)
            if V4L2Device.ioctl(fd, CV4L2_VIDIOC_DQBUF(), &buffer) != 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw V4L2Error.ioctl("VIDIOC_DQBUF", device: device.path, errno: errno)
            }
            let dequeued = MonotonicClock.now()
            lastFrame = dequeued
            let kernelNs = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
            // Sequence gaps are frames the kernel lost.
            if let first = firstSequence {
                let missing = buffer.sequence &- lastSequence &- 1
                if missing > 0 && missing < 1_000_000 {
                    sequenceGaps.record(from: UInt64(lastSequence &- first) + 1, count: Int(missing))
                }
            } else {
                firstSequence = buffer.sequence
            }
            lastSequence = buffer.sequence
            var capture = dequeued
            // A dequeue time says only that the frame was done by then: one frame period is the
            // honest bound while the capture keeps up (the frames log shows when it did not).
            var uncertainty = fallbackUncertaintyNs
            let monotonic = buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) == UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
            // One consistent read of the mapping serves both the time and its uncertainty.
            let clockPair = mapping.snapshot
            if monotonic, let mapped = clockPair?.toRaw(kernelNs), mapped > 0, UInt64(mapped) <= dequeued,
                UInt64(mapped) >= lastCapture
            {
                capture = UInt64(mapped)
                // timeval truncates the kernel's time to a microsecond; the mapping adds its own.
                uncertainty = 1_000 + UInt64(clockPair!.uncertaintyNs(at: kernelNs))
            } else {
                untrustedTimestamps += 1
            }
            lastCapture = capture
            record.sequence = UInt64(buffer.sequence &- firstSequence!)
            record.dequeueNs = dequeued
            record.captureNs = capture
            record.uncertaintyNs = uncertainty
            record.bufferIndex = Int32(buffer.index)
            record.bytesUsed = buffer.bytesused
            record.deviceNs = kernelNs
            record.flags = buffer.flags
            // V4L2 says an ERROR buffer may hold corrupt data, and streaming goes on: the frame
            // is kept (so frame_number stays the index in the video) and counted.
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 { errorFlaggedFrames += 1 }
            if ring.push(record, sequence: record.sequence) {
                buffersAtWriter.add(1, ordering: .relaxed)
            } else {
                _ = queue(Int32(buffer.index))
            }
        }
    }

    public func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? {
        guard record.bufferIndex >= 0, Int(record.bufferIndex) < buffers.count else { return nil }
        return UnsafeRawBufferPointer(start: buffers[Int(record.bufferIndex)].start, count: Int(record.bytesUsed))
    }

    public func releaseBuffer(_ index: Int32) {
        buffersAtWriter.subtract(1, ordering: .relaxed)
        // QBUF from the writer thread: the kernel's vb2 queue takes its own lock. A refusal ends
        // the stream (the capture thread sees it); after a stop it does not matter.
        if queue(index) != 0 && errno != EINVAL {
            requeueFailure.store(errno, ordering: .relaxed)
        }
    }
}
