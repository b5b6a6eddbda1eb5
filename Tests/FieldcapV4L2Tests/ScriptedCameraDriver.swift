import CV4L2
import FieldcapSystem
import Synchronization

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// A V4L2 camera driver played from a script, through the device seam (`DeviceCalls`): what
/// `V4L2Camera` sees of a real driver (a YUYV 640x480 camera at 30 fps, four mmap buffers) and, at
/// each wait and dequeue, the next step of the script. The kernel rig proves the real drivers;
/// this proves what the capture loop decides on each of their answers.
final class ScriptedCameraDriver: DeviceCalls, @unchecked Sendable {
    /// When the driver stamps a frame, in CLOCK_MONOTONIC.
    enum Stamp {
        /// This long before (negative: after) the dequeue: a real camera's frame is done a little
        /// before the program dequeues it.
        case beforeDequeue(Int64)
        /// This long before the previous frame's stamp: time going backwards.
        case beforePrevious(Int64)
    }

    /// What the driver does at the camera's next wait (and, for a frame, the dequeue after it).
    enum Step {
        /// A frame is ready: the next DQBUF returns it, stamped as `stamp` says, with `flags`.
        case frame(
            sequence: UInt32, stamp: Stamp = .beforeDequeue(1_000_000), flags: UInt32 = ScriptedCameraDriver.monotonic)
        /// The wait says a frame is ready, and DQBUF fails with this errno.
        case dequeueFails(Int32)
        /// The wait reports these events on the camera (POLLERR, POLLHUP).
        case pollEvents(Int16)
        /// The wait is interrupted by a signal once (-1, EINTR), a millisecond into it.
        case interruptWait
        /// The next DQBUF is interrupted by a signal once, then returns this frame.
        case interruptDequeue(sequence: UInt32)
        /// A buffer given back with no data and flagged ERROR, as uvcvideo's are at an unplug.
        case emptyBuffer(sequence: UInt32)
    }

    static let monotonic = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_SOE)
    static let descriptor: Int32 = 1_000
    /// The metadata node beside the camera (a UVC camera's), opened by its path: `metadataPath`.
    static let metadataDescriptor: Int32 = 1_001
    static let metadataPath = "/nonexistent/scripted-video1"
    static let bufferLength = 4_096

    /// A frame as the driver handed it out: its stamp in CLOCK_MONOTONIC and the
    /// CLOCK_MONOTONIC_RAW reading taken beside it (`rawNs` ± `rawWidthNs`).
    struct Handed {
        var sequence: UInt32
        var index: UInt32
        var kernelNs: Int64
        var rawNs: Int64
        var rawWidthNs: Int64
    }

    private struct State {
        var script: [Step]
        var interruptedDequeue = false
        var queued: Set<UInt32> = []
        var handed: [Handed] = []
        var queueCalls = 0
        var streaming = false
        var streamOffs = 0
        var waitsWithoutStop = 0
        var closes = 0
        var openFlags: Int32 = 0
        var opens = 0
        /// The mapped buffers' addresses (as integers: a pointer may not cross the lock).
        var memory: [Int] = []
        var metadataOpens = 0
        var metadataCloses = 0
        var metadataStreaming = false
        var metadataQueued: Set<UInt32> = []
        var metadataDequeues = 0
        /// Metadata buffers handed back (one per frame handed out, when `metadataWithoutClock`).
        var metadataHanded = 0
        /// The metadata buffers' memory, by index (as integers).
        var metadataMemory: [UInt32: Int] = [:]
    }
    private let state: Mutex<State>
    /// From the frame with this index on, every QBUF fails with `errno` (a device gone while the
    /// writer held a buffer).
    private let queueFailure: (afterFrames: Int, errno: Int32)?
    /// What QUERYCAP says the node can do.
    private let capabilities: UInt32
    /// From the second open on, QUERYCAP names another camera (another card): a different camera
    /// plugged in where the first was.
    private let anotherCameraAfterReopen: Bool
    /// From the second open on, QUERYCAP gives another bus: the same camera in another port.
    private let movedAfterReopen: Bool
    /// Opens after the first that fail with ENODEV: a node listed but not back yet.
    private let failedReopens: Int
    /// From the second open on, the only size S_FMT grants: a camera back with other modes.
    private let widthAfterReopen: UInt32?
    /// The metadata node hands back a buffer with each frame, empty (the camera's headers carry no
    /// PTS or SCR: its clock stopped travelling); else it never has one ready (stalled).
    private let metadataWithoutClock: Bool

    init(
        _ script: [Step], queueFailure: (afterFrames: Int, errno: Int32)? = nil,
        capabilities: UInt32 = UInt32(V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING),
        anotherCameraAfterReopen: Bool = false, movedAfterReopen: Bool = false, failedReopens: Int = 0,
        widthAfterReopen: UInt32? = nil, metadataWithoutClock: Bool = false
    ) {
        self.metadataWithoutClock = metadataWithoutClock
        state = Mutex(State(script: script))
        self.queueFailure = queueFailure
        self.capabilities = capabilities
        self.anotherCameraAfterReopen = anotherCameraAfterReopen
        self.movedAfterReopen = movedAfterReopen
        self.failedReopens = failedReopens
        self.widthAfterReopen = widthAfterReopen
    }

    deinit {
        for address in state.withLock({ $0.memory }) { UnsafeMutableRawPointer(bitPattern: address)?.deallocate() }
    }

    /// Steps not yet played.
    var remaining: Int { state.withLock { $0.script.count } }
    var handed: [Handed] { state.withLock { $0.handed } }
    var queueCalls: Int { state.withLock { $0.queueCalls } }
    var streamOffs: Int { state.withLock { $0.streamOffs } }
    var queuedBuffers: Set<UInt32> { state.withLock { $0.queued } }
    /// Waits that did not include the stop signal's pipe: a stop could not have woken them.
    var waitsWithoutStop: Int { state.withLock { $0.waitsWithoutStop } }
    var closes: Int { state.withLock { $0.closes } }
    /// The flags of the last open.
    var openFlags: Int32 { state.withLock { $0.openFlags } }
    var opens: Int { state.withLock { $0.opens } }
    /// The metadata node: opens, closes, and DQBUFs asked of it (it never has a buffer ready:
    /// a node that stalled while the video flows).
    var metadataOpens: Int { state.withLock { $0.metadataOpens } }
    var metadataCloses: Int { state.withLock { $0.metadataCloses } }
    var metadataDequeues: Int { state.withLock { $0.metadataDequeues } }
    var metadataStreaming: Bool { state.withLock { $0.metadataStreaming } }

    // MARK: DeviceCalls

    func open(_ path: String, _ flags: Int32) -> Int32 {
        if path == Self.metadataPath {
            state.withLock { $0.metadataOpens += 1 }
            return Self.metadataDescriptor
        }
        let refused: Bool = state.withLock {
            $0.openFlags = flags
            $0.opens += 1
            return $0.opens > 1 && $0.opens <= 1 + failedReopens
        }
        return refused ? fail(ENODEV) : Self.descriptor
    }
    func close(_ descriptor: Int32) -> Int32 {
        state.withLock {
            if descriptor == Self.metadataDescriptor { $0.metadataCloses += 1 } else { $0.closes += 1 }
        }
        return 0
    }

    func mmap(_ descriptor: Int32, length: Int, offset: Int64) -> UnsafeMutableRawPointer? {
        let block = UnsafeMutableRawPointer.allocate(byteCount: length, alignment: 64)
        block.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: offset / 4_096), count: length)
        let address = Int(bitPattern: block)
        state.withLock {
            $0.memory.append(address)
            if descriptor == Self.metadataDescriptor {
                $0.metadataMemory[UInt32((offset - (1 << 20)) / 1_024)] = address
            }
        }
        return block
    }

    func munmap(_ start: UnsafeMutableRawPointer, length: Int) -> Int32 { 0 }

    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32 {
        // The stop signal's pipe is real: ask the kernel about it.
        var stopReadable = false
        if count > 1 {
            var other = descriptors[1]
            other.revents = 0
            stopReadable = Glibc.poll(&other, 1, 0) > 0
            descriptors[1].revents = other.revents
        }
        let next: Step? = state.withLock { state in
            if count < 2 { state.waitsWithoutStop += 1 }
            guard let step = state.script.first else { return nil }
            switch step {
            case .pollEvents, .interruptWait: state.script.removeFirst()
            default: break
            }
            return step
        }
        switch next {
        case .pollEvents(let events)?:
            descriptors[0].revents = events
        case .interruptWait?:
            usleep(1_000)
            errno = EINTR
            return -1
        case .some:
            // The wait lasts while the frame is made: frames come at least 2 ms apart, each stamped
            // 1 ms before its dequeue by default, so one is never stamped before the last dequeue.
            usleep(2_000)
            descriptors[0].revents = Int16(POLLIN)
        case nil:
            // Nothing to say: a quiet camera. Sleep a little, as a wait with a timeout does.
            if !stopReadable { usleep(UInt32(min(timeoutMs, 5)) * 1_000) }
            descriptors[0].revents = 0
        }
        return Int32((descriptors[0].revents != 0 ? 1 : 0) + (stopReadable ? 1 : 0))
    }

    func ioctl(_ descriptor: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        if descriptor == Self.metadataDescriptor { return metadataIoctl(request, argument) }
        switch request {
        case CV4L2_VIDIOC_QUERYCAP():
            let capability = argument.assumingMemoryBound(to: v4l2_capability.self)
            capability.pointee.capabilities = capabilities | UInt32(V4L2_CAP_DEVICE_CAPS)
            capability.pointee.device_caps = capabilities
            withUnsafeMutableBytes(of: &capability.pointee.driver) { bytes in
                for (offset, byte) in "scripted".utf8.enumerated() { bytes[offset] = byte }
            }
            let card = anotherCameraAfterReopen && opens > 1 ? "other scripted camera" : "scripted camera"
            withUnsafeMutableBytes(of: &capability.pointee.card) { bytes in
                for (offset, byte) in card.utf8.enumerated() { bytes[offset] = byte }
            }
            let bus = movedAfterReopen && opens > 1 ? "usb-scripted-2" : "usb-scripted-1"
            withUnsafeMutableBytes(of: &capability.pointee.bus_info) { bytes in
                for (offset, byte) in bus.utf8.enumerated() { bytes[offset] = byte }
            }
        case CV4L2_VIDIOC_ENUM_FMT():
            let description = argument.assumingMemoryBound(to: v4l2_fmtdesc.self)
            guard description.pointee.index == 0 else { return fail(EINVAL) }
            description.pointee.pixelformat = V4L2Device.fourcc(.yuyv)
        case CV4L2_VIDIOC_S_FMT(), CV4L2_VIDIOC_G_FMT():
            let format = argument.assumingMemoryBound(to: v4l2_format.self)
            format.pointee.fmt.pix.pixelformat = V4L2Device.fourcc(.yuyv)
            let width = opens > 1 ? widthAfterReopen ?? 640 : 640
            format.pointee.fmt.pix.width = width
            format.pointee.fmt.pix.height = 480
            format.pointee.fmt.pix.bytesperline = width * 2
            format.pointee.fmt.pix.sizeimage = 614_400
        case CV4L2_VIDIOC_ENUM_FRAMESIZES():
            let size = argument.assumingMemoryBound(to: v4l2_frmsizeenum.self)
            guard size.pointee.index == 0 else { return fail(EINVAL) }
            size.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
            size.pointee.discrete = v4l2_frmsize_discrete(width: 640, height: 480)
        case CV4L2_VIDIOC_ENUM_FRAMEINTERVALS():
            let interval = argument.assumingMemoryBound(to: v4l2_frmivalenum.self)
            guard interval.pointee.index == 0 else { return fail(EINVAL) }
            interval.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            interval.pointee.discrete = v4l2_fract(numerator: 1, denominator: 30)
        case CV4L2_VIDIOC_S_PARM(), CV4L2_VIDIOC_G_PARM():
            let parameters = argument.assumingMemoryBound(to: v4l2_streamparm.self)
            parameters.pointee.parm.capture.timeperframe = v4l2_fract(numerator: 1, denominator: 30)
        case CV4L2_VIDIOC_QUERYCTRL(), CV4L2_VIDIOC_EXPBUF():
            return fail(EINVAL)
        case CV4L2_VIDIOC_REQBUFS():
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            request.pointee.count = min(request.pointee.count, 4)
            // vb2 frees the queue's buffers and makes new ones: none is queued.
            state.withLock { $0.queued.removeAll() }
        case CV4L2_VIDIOC_QUERYBUF():
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            buffer.pointee.length = UInt32(Self.bufferLength)
            buffer.pointee.m.offset = buffer.pointee.index * UInt32(Self.bufferLength)
            buffer.pointee.flags = Self.monotonic
        case CV4L2_VIDIOC_QBUF():
            let index = argument.assumingMemoryBound(to: v4l2_buffer.self).pointee.index
            return state.withLock { state in
                state.queueCalls += 1
                if let queueFailure, state.streaming, state.handed.count >= queueFailure.afterFrames {
                    return fail(queueFailure.errno)
                }
                // vb2 refuses a buffer that is already queued, and any once streaming stopped.
                guard state.queued.insert(index).inserted else { return fail(EINVAL) }
                return 0
            }
        case CV4L2_VIDIOC_STREAMON():
            state.withLock { $0.streaming = true }
        case CV4L2_VIDIOC_STREAMOFF():
            state.withLock {
                $0.streaming = false
                $0.streamOffs += 1
                $0.queued.removeAll()
            }
        case CV4L2_VIDIOC_DQBUF():
            return dequeue(argument.assumingMemoryBound(to: v4l2_buffer.self))
        default:
            return fail(ENOTTY)
        }
        return 0
    }

    /// A UVC metadata node as uvcvideo's answers it, up to its stream: then it never has a
    /// buffer ready.
    private func metadataIoctl(_ request: UInt, _ argument: UnsafeMutableRawPointer) -> Int32 {
        switch request {
        case CV4L2_VIDIOC_QUERYCAP():
            let capability = argument.assumingMemoryBound(to: v4l2_capability.self)
            let capabilities = UInt32(V4L2_CAP_META_CAPTURE | V4L2_CAP_STREAMING)
            capability.pointee.capabilities = capabilities | UInt32(V4L2_CAP_DEVICE_CAPS)
            capability.pointee.device_caps = capabilities
        case CV4L2_VIDIOC_G_FMT(), CV4L2_VIDIOC_S_FMT():
            argument.assumingMemoryBound(to: v4l2_format.self).pointee.fmt.meta.dataformat = UVCMetadataStream.uvcFormat
        case CV4L2_VIDIOC_REQBUFS():
            let request = argument.assumingMemoryBound(to: v4l2_requestbuffers.self)
            request.pointee.count = min(request.pointee.count, 4)
        case CV4L2_VIDIOC_QUERYBUF():
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            buffer.pointee.length = 1_024
            buffer.pointee.m.offset = 1 << 20 + buffer.pointee.index * 1_024
        case CV4L2_VIDIOC_QBUF():
            let index = argument.assumingMemoryBound(to: v4l2_buffer.self).pointee.index
            let queued = state.withLock { $0.metadataQueued.insert(index).inserted }
            if !queued { return fail(EINVAL) }
        case CV4L2_VIDIOC_STREAMON(): state.withLock { $0.metadataStreaming = true }
        case CV4L2_VIDIOC_STREAMOFF():
            state.withLock {
                $0.metadataStreaming = false
                $0.metadataQueued.removeAll()
            }
        case CV4L2_VIDIOC_DQBUF():
            let buffer = argument.assumingMemoryBound(to: v4l2_buffer.self)
            let handed: (index: UInt32, address: Int)? = state.withLock { state in
                state.metadataDequeues += 1
                guard metadataWithoutClock, state.metadataHanded < state.handed.count,
                    let index = state.metadataQueued.min(), let address = state.metadataMemory[index]
                else { return nil }
                state.metadataQueued.remove(index)
                state.metadataHanded += 1
                return (index, address)
            }
            guard let handed, let memory = UnsafeMutableRawPointer(bitPattern: handed.address) else {
                return fail(EAGAIN)
            }
            // uvcvideo copies no block for a header of two bytes (no PTS, no SCR): the buffer comes
            // back with the frame, empty.
            _ = memory
            buffer.pointee.index = handed.index
            buffer.pointee.bytesused = 0
            buffer.pointee.sequence = UInt32(state.withLock { $0.metadataHanded } - 1)
            return 0
        default:
            return fail(ENOTTY)
        }
        return 0
    }

    private func dequeue(_ buffer: UnsafeMutablePointer<v4l2_buffer>) -> Int32 {
        let outcome: (Int32, Handed?) = state.withLock { state in
            guard let step = state.script.first else { return (EAGAIN, nil) }
            let sequence: UInt32, stamp: Stamp, flags: UInt32
            var bytesUsed = UInt32(Self.bufferLength)
            switch step {
            case .dequeueFails(let code):
                state.script.removeFirst()
                return (code, nil)
            case .interruptDequeue(let number):
                if !state.interruptedDequeue {
                    state.interruptedDequeue = true
                    return (EINTR, nil)
                }
                (sequence, stamp, flags) = (number, .beforeDequeue(1_000_000), Self.monotonic)
            case .frame(let number, let frameStamp, let frameFlags):
                (sequence, stamp, flags) = (number, frameStamp, frameFlags)
            case .emptyBuffer(let number):
                (sequence, stamp, flags) = (
                    number, .beforeDequeue(1_000_000), Self.monotonic | UInt32(V4L2_BUF_FLAG_ERROR)
                )
                bytesUsed = 0
            default:
                return (EAGAIN, nil)
            }
            // A driver fills only buffers that were queued; with none, the frame is lost to it.
            guard let index = state.queued.min() else { return (EAGAIN, nil) }
            state.script.removeFirst()
            state.interruptedDequeue = false
            state.queued.remove(index)
            let before = Self.read(CLOCK_MONOTONIC_RAW)
            let now = Self.read(CLOCK_MONOTONIC)
            let after = Self.read(CLOCK_MONOTONIC_RAW)
            let kernel: Int64
            switch stamp {
            case .beforeDequeue(let ago): kernel = now - ago
            case .beforePrevious(let ago): kernel = (state.handed.last?.kernelNs ?? now) - ago
            }
            let handed = Handed(
                sequence: sequence, index: index, kernelNs: kernel, rawNs: (before + after) / 2 + (kernel - now),
                rawWidthNs: after - before)
            state.handed.append(handed)
            buffer.pointee.index = index
            buffer.pointee.sequence = sequence
            buffer.pointee.flags = flags
            buffer.pointee.bytesused = bytesUsed
            buffer.pointee.timestamp = timeval(
                tv_sec: Int(kernel / 1_000_000_000), tv_usec: Int(kernel % 1_000_000_000 / 1_000))
            return (0, handed)
        }
        return outcome.0 == 0 ? 0 : fail(outcome.0)
    }

    private func fail(_ code: Int32) -> Int32 {
        errno = code
        return -1
    }

    static func read(_ clock: clockid_t) -> Int64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
