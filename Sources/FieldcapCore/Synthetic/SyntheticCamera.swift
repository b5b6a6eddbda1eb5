import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// A camera without hardware: a moving YUYV test pattern at a nominal rate, in buffers the
/// source owns and the writer hands back, stamped at "dequeue" like a real camera's frames.
///
/// Like a V4L2 camera it has a fixed set of buffers: a frame is drawn into a free one, its index
/// goes through the ring, and the writer returns the buffer after writing it (`releaseBuffer`,
/// through an SPSC ring back to the capture thread). When the writer holds every buffer the frame
/// is dropped and counted, never waited for.
///
/// Thread-bound (capture) while running; `frameBytes` and `releaseBuffer` are writer-bound.
public final class SyntheticCamera: CaptureSource, @unchecked Sendable {
    public let descriptor: StreamDescriptor
    public let format: VideoFormat
    private let periodNs: UInt64
    private let frameSize: Int
    private let buffers: [UnsafeMutableRawPointer]
    /// Buffers the writer has handed back (writer → capture).
    private let returned: SPSCRing<Int32>
    /// One frame of the pattern, twice as wide, so a moving window of it is a memcpy per row.
    private let pattern: UnsafeMutableRawPointer

    /// - Parameters:
    ///   - id: the stream id.
    ///   - width, height: the frame size (even width; YUYV packs two pixels in four bytes).
    ///   - rate: frames per second.
    ///   - bufferCount: buffers in flight, as a V4L2 camera's mmap buffers.
    public init(id: String = "cam", width: Int = 640, height: Int = 480, rate: Double = 30, bufferCount: Int = 8) {
        precondition(width > 0 && width % 2 == 0 && height > 0 && rate > 0 && bufferCount > 0)
        format = VideoFormat(width: width, height: height, pixelFormat: .yuyv)
        descriptor = StreamDescriptor(
            id: id, kind: .video, nominalRate: rate, device: "synthetic:\(width)x\(height)@\(rate.formatted)",
            videoFormat: format,
            frameBuffers: bufferCount)
        periodNs = UInt64(1e9 / rate)
        frameSize = width * height * 2
        // Page-aligned, like mmap'd buffers: the video writer can then use direct I/O.
        let page = max(4096, sysconf(Int32(_SC_PAGESIZE)))
        buffers = (0..<bufferCount).map { _ in
            UnsafeMutableRawPointer.allocate(byteCount: width * height * 2, alignment: page)
        }
        returned = SPSCRing(minimumCapacity: bufferCount)
        pattern = .allocate(byteCount: width * 2 * 2 * height, alignment: 64)
        drawPattern()
        for index in 0..<bufferCount { _ = returned.tryPush(Int32(index)) }
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
        pattern.deallocate()
    }

    /// Vertical colour bars with a diagonal ramp in luma, repeated twice across, so any window
    /// `width` pixels wide is a valid frame.
    private func drawPattern() {
        let width = format.width, height = format.height
        let rowBytes = width * 2 * 2
        let bars: [(y: UInt8, u: UInt8, v: UInt8)] = [
            (235, 128, 128), (210, 16, 146), (170, 166, 16), (145, 54, 34), (106, 202, 222), (81, 90, 240),
            (41, 240, 110), (16, 128, 128),
        ]
        for row in 0..<height {
            let line = (pattern + row * rowBytes).assumingMemoryBound(to: UInt8.self)
            for pair in 0..<width {  // two periods of `width` pixels = `width` YUYV pairs
                let x = (pair * 2) % width
                let bar = bars[x * bars.count / width]
                let ramp = UInt8(truncatingIfNeeded: (x + row) & 0x3F)
                line[pair * 4 + 0] = bar.y &- min(bar.y - 16, ramp)
                line[pair * 4 + 1] = bar.u
                line[pair * 4 + 2] = bar.y
                line[pair * 4 + 3] = bar.v
            }
        }
    }

    /// Draws frame `sequence` into `buffer`: the pattern shifted left by 4 pixels a frame.
    private func draw(_ sequence: UInt64, into buffer: UnsafeMutableRawPointer) {
        let rowOut = format.width * 2
        let shift = Int(sequence * 4 % UInt64(format.width)) * 2
        for row in 0..<format.height {
            (buffer + row * rowOut).copyMemory(from: pattern + row * rowOut * 2 + shift, byteCount: rowOut)
        }
    }

    public func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
        var due = MonotonicClock.read(CLOCK_MONOTONIC)
        var sequence: UInt64 = 0
        var record = CaptureRecord()
        // A buffer whose frame did not fit in the ring stays here for the next frame: the return
        // ring has one producer, the writer, so the capture thread never pushes into it.
        var spare: Int32?
        while !stop.isRequested {
            due += periodNs
            var wake = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &wake, nil) == EINTR {}
            let dequeued = MonotonicClock.now()
            defer { sequence += 1 }
            guard let index = spare ?? returned.pop() else {
                // Every buffer is with the writer: this frame is lost, and counted.
                ring.drops.record(sequence)
                continue
            }
            spare = nil
            draw(sequence, into: buffers[Int(index)])
            record.sequence = sequence
            record.dequeueNs = dequeued
            record.captureNs = dequeued
            record.uncertaintyNs = 1_000_000
            record.bufferIndex = index
            record.bytesUsed = UInt32(frameSize)
            if !ring.push(record, sequence: sequence) { spare = index }
        }
    }

    public func frameBytes(of record: CaptureRecord) -> UnsafeRawBufferPointer? {
        guard record.bufferIndex >= 0 else { return nil }
        return UnsafeRawBufferPointer(start: buffers[Int(record.bufferIndex)], count: Int(record.bytesUsed))
    }

    public func releaseBuffer(_ index: Int32) {
        _ = returned.tryPush(index)
    }
}

extension SyntheticCamera {
    public var report: SourceReport {
        SourceReport(
            kind: "synthetic",
            granted: [
                "device": "synthetic", "source": "moving test pattern", "format": .string(format.pixelFormat.rawValue),
                "width": JSONValue(format.width), "height": JSONValue(format.height),
                "rate": .double(descriptor.nominalRate),
                "buffers": JSONValue(buffers.count),
            ],
            summary: "moving test pattern, \(format.pixelFormat.rawValue) \(format.width)x\(format.height), "
                + "\(SourceReport.rate(descriptor.nominalRate)) fps, \(buffers.count) buffers, stamped at dequeue",
            timeSource: "dequeue", timestamps: SourceReport.dequeueTimestamps)
    }
}
