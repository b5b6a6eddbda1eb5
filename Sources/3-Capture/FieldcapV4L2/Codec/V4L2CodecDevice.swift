import CV4L2
import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An open V4L2 memory-to-memory node: a codec with two queues, raw frames in through OUTPUT and
/// coded ones out of CAPTURE for an encoder (the kernel's stateful encoder interface,
/// Documentation/userspace-api/media/v4l/dev-encoder.rst). Either buffer API: single-planar
/// (`V4L2_CAP_VIDEO_M2M`, vicodec's default, CODA) or multi-planar with one plane
/// (`V4L2_CAP_VIDEO_M2M_MPLANE`: Raspberry Pi, Rockchip, Hantro).
///
/// The device layer only: ioctls, buffers and events. `V4L2Encoder` (FieldcapEncode) drives it.
///
/// Thread-bound: one owner at a time.
public final class V4L2CodecDevice {
    /// OUTPUT takes buffers from us (raw frames for an encoder), CAPTURE gives them back (coded
    /// frames).
    public enum Queue: String, Sendable {
        case output = "OUTPUT"
        case capture = "CAPTURE"
    }

    /// One pixel or coded format a queue offers.
    public struct Format: Sendable, Equatable {
        public var fourcc: String
        public var description: String
        public var compressed: Bool
    }

    /// What the driver granted at `VIDIOC_S_FMT`.
    public struct Granted: Sendable, Equatable {
        public var fourcc: String
        public var width: Int
        public var height: Int
        /// Bytes from one line to the next (raw formats; 0 for coded ones).
        public var bytesPerLine: Int
        /// The largest buffer a frame needs.
        public var sizeImage: Int
    }

    /// A buffer the driver has finished with.
    public struct Dequeued: Sendable {
        public var index: Int
        public var bytesUsed: Int
        public var flags: UInt32
        /// The OUTPUT buffer's timestamp, copied to the CAPTURE buffer coded from it.
        public var timestamp: timeval

        public var isLast: Bool { flags & UInt32(V4L2_BUF_FLAG_LAST) != 0 }
        public var isError: Bool { flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 }
        public var isKeyframe: Bool { flags & UInt32(V4L2_BUF_FLAG_KEYFRAME) != 0 }
    }

    /// One mmap'd buffer.
    public struct Mapped {
        public var start: UnsafeMutableRawPointer
        public var length: Int
    }

    public let path: String
    public let identity: V4L2Device.Identity
    /// The node uses the multi-planar buffer API.
    public let multiplanar: Bool
    /// The open node and the calls that reach it: the kernel's (libv4l2 only converts capture
    /// formats), or a test's script.
    let node: DeviceNode
    private var mapped: [Queue: [Mapped]] = [:]
    /// Queues whose buffers are imported DMABUFs rather than mmap'd.
    private var importing: Set<Queue> = []

    /// Whether a node's capabilities are a memory-to-memory device's.
    public static func isMemoryToMemory(_ capabilities: UInt32) -> Bool {
        capabilities & UInt32(V4L2_CAP_VIDEO_M2M | V4L2_CAP_VIDEO_M2M_MPLANE) != 0
    }

    /// Opens `path` and checks it is a memory-to-memory device that can stream.
    public init(path: String, calls: any DeviceCalls = KernelDeviceCalls()) throws(V4L2Error) {
        self.path = path
        (node, identity) = try V4L2Device.open(path, calls: calls)
        let caps = identity.capabilities
        multiplanar = caps & UInt32(V4L2_CAP_VIDEO_M2M_MPLANE) != 0
        // Every stored property is set: the throw below runs deinit, which closes the node.
        guard Self.isMemoryToMemory(caps), identity.canStream else {
            throw V4L2Error(
                code: .notADevice, device: path, operation: "VIDIOC_QUERYCAP", errno: 0,
                hint: "\(identity.card) (\(identity.driver)) is not a memory-to-memory codec;"
                    + " `fieldcap list` shows the encoders")
        }
    }

    deinit {
        for (_, buffers) in mapped { for buffer in buffers { node.munmap(buffer.start, length: buffer.length) } }
        node.close()
    }

    /// `request` on the node: 0, or -1 with `errno` set (as `failure` reads it).
    func ioctl<T>(_ request: UInt, _ argument: inout T) -> Int32 {
        node.ioctl(request, &argument) == nil ? 0 : -1
    }

    private func failure(_ operation: String, _ queue: Queue? = nil) -> V4L2Error {
        .ioctl(queue.map { "\(operation) (\($0.rawValue))" } ?? operation, device: path, errno: errno)
    }

    func bufferType(_ queue: Queue) -> UInt32 {
        switch (queue, multiplanar) {
        case (.output, false): V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue
        case (.output, true): V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE.rawValue
        case (.capture, false): V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        case (.capture, true): V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE.rawValue
        }
    }

    /// The formats `queue` offers (`VIDIOC_ENUM_FMT`).
    public func formats(_ queue: Queue) -> [Format] {
        var formats: [Format] = []
        var description = v4l2_fmtdesc()
        description.type = bufferType(queue)
        while ioctl(CV4L2_VIDIOC_ENUM_FMT(), &description) == 0 {
            formats.append(
                Format(
                    fourcc: V4L2Device.fourcc(description.pixelformat),
                    description: V4L2Device.string(description.description),
                    compressed: description.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0))
            description.index += 1
        }
        return formats
    }

    /// Sets `queue`'s format (`VIDIOC_S_FMT`) and returns what the driver granted. `sizeImage`
    /// is asked of coded formats, whose buffers the driver cannot size from the picture alone.
    public func setFormat(
        _ queue: Queue, fourcc: String, width: Int, height: Int, sizeImage: Int = 0
    ) throws(V4L2Error) -> Granted {
        let code = Self.code(fourcc)
        var format = v4l2_format()
        format.type = bufferType(queue)
        if multiplanar {
            format.fmt.pix_mp.pixelformat = code
            format.fmt.pix_mp.width = UInt32(width)
            format.fmt.pix_mp.height = UInt32(height)
            format.fmt.pix_mp.field = V4L2_FIELD_NONE.rawValue
            format.fmt.pix_mp.num_planes = 1
            format.fmt.pix_mp.plane_fmt.0.sizeimage = UInt32(sizeImage)
        } else {
            format.fmt.pix.pixelformat = code
            format.fmt.pix.width = UInt32(width)
            format.fmt.pix.height = UInt32(height)
            format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
            format.fmt.pix.sizeimage = UInt32(sizeImage)
        }
        guard ioctl(CV4L2_VIDIOC_S_FMT(), &format) == 0 else { throw failure("VIDIOC_S_FMT", queue) }
        if multiplanar {
            let pix = format.fmt.pix_mp
            guard pix.num_planes == 1 else {
                throw V4L2Error(
                    code: .unsupported, device: path, operation: "VIDIOC_S_FMT (\(queue.rawValue))",
                    hint: "the driver puts \(fourcc) in \(pix.num_planes) planes; fieldcap passes frames in one")
            }
            return Granted(
                fourcc: V4L2Device.fourcc(pix.pixelformat), width: Int(pix.width), height: Int(pix.height),
                bytesPerLine: Int(pix.plane_fmt.0.bytesperline), sizeImage: Int(pix.plane_fmt.0.sizeimage))
        }
        let pix = format.fmt.pix
        return Granted(
            fourcc: V4L2Device.fourcc(pix.pixelformat), width: Int(pix.width), height: Int(pix.height),
            bytesPerLine: Int(pix.bytesperline), sizeImage: Int(pix.sizeimage))
    }

    /// Asks an encoder to code only the top-left `width` x `height` of its OUTPUT pictures
    /// (`VIDIOC_S_SELECTION`, `V4L2_SEL_TGT_CROP`), for frames padded to the encoder's alignment,
    /// and returns the rectangle it took (`VIDIOC_G_SELECTION`), or nil when it has no crop. The
    /// selection API takes the single-planar buffer type for both buffer APIs.
    @discardableResult
    public func setVisibleSize(width: Int, height: Int) -> (width: Int, height: Int)? {
        var selection = v4l2_selection()
        selection.type = V4L2_BUF_TYPE_VIDEO_OUTPUT.rawValue
        selection.target = UInt32(V4L2_SEL_TGT_CROP)
        selection.r = v4l2_rect(left: 0, top: 0, width: UInt32(width), height: UInt32(height))
        guard ioctl(CV4L2_VIDIOC_S_SELECTION(), &selection) == 0 else { return nil }
        guard ioctl(CV4L2_VIDIOC_G_SELECTION(), &selection) == 0 else { return nil }
        return (Int(selection.r.width), Int(selection.r.height))
    }

    /// Tells the codec the frame rate (`VIDIOC_S_PARM` on OUTPUT), which an encoder's rate
    /// control needs. False when the driver has no such setting (vicodec).
    @discardableResult
    public func setFrameRate(_ rate: Double) -> Bool {
        guard rate > 0 else { return false }
        var parameters = v4l2_streamparm()
        parameters.type = bufferType(.output)
        parameters.parm.output.timeperframe = v4l2_fract(numerator: 1000, denominator: UInt32((rate * 1000).rounded()))
        return ioctl(CV4L2_VIDIOC_S_PARM(), &parameters) == 0
    }

    /// The codec controls fieldcap sets.
    public enum Control: Sendable {
        /// Bits per second (`V4L2_CID_MPEG_VIDEO_BITRATE`).
        case bitrate
        /// Frames from one I-frame to the next (`V4L2_CID_MPEG_VIDEO_GOP_SIZE`).
        case gopSize
        /// H.264's I-frame period (`V4L2_CID_MPEG_VIDEO_H264_I_PERIOD`).
        case h264IFramePeriod
        /// 1: the sequence header with every I-frame (`V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER`).
        case repeatSequenceHeader
        /// 1: the stream header in the first frame's buffer, not in one of its own
        /// (`V4L2_CID_MPEG_VIDEO_HEADER_MODE`, JOINED_WITH_1ST_FRAME).
        case headerJoinedWithFirstFrame
        /// B-frames between references (`V4L2_CID_MPEG_VIDEO_B_FRAMES`).
        case bFrames

        var id: UInt32 {
            switch self {
            case .bitrate: UInt32(V4L2_CID_MPEG_VIDEO_BITRATE)
            case .gopSize: UInt32(V4L2_CID_MPEG_VIDEO_GOP_SIZE)
            case .h264IFramePeriod: UInt32(V4L2_CID_MPEG_VIDEO_H264_I_PERIOD)
            case .repeatSequenceHeader: UInt32(V4L2_CID_MPEG_VIDEO_REPEAT_SEQ_HEADER)
            case .headerJoinedWithFirstFrame: UInt32(V4L2_CID_MPEG_VIDEO_HEADER_MODE)
            case .bFrames: UInt32(V4L2_CID_MPEG_VIDEO_B_FRAMES)
            }
        }
    }

    /// Sets a codec control (`VIDIOC_S_EXT_CTRLS`, which codec controls need). False when the
    /// driver has no such control or refuses the value.
    @discardableResult
    public func setControl(_ control: Control, _ value: Int32) -> Bool {
        let value =
            control == .headerJoinedWithFirstFrame
            ? (value != 0 ? Int32(V4L2_MPEG_VIDEO_HEADER_MODE_JOINED_WITH_1ST_FRAME.rawValue) : 0) : value
        return setControl(id: control.id, value)
    }

    private func setControl(id: UInt32, _ value: Int32) -> Bool {
        var control = v4l2_ext_control()
        control.id = id
        control.value = value
        return withUnsafeMutablePointer(to: &control) { pointer in
            var controls = v4l2_ext_controls()
            controls.which = UInt32(V4L2_CTRL_WHICH_CUR_VAL)
            controls.count = 1
            controls.controls = pointer
            return ioctl(CV4L2_VIDIOC_S_EXT_CTRLS(), &controls) == 0
        }
    }

    /// Requests `count` mmap buffers on `queue` (the driver may grant another number) and maps
    /// them (`VIDIOC_REQBUFS`, `VIDIOC_QUERYBUF`, `mmap`).
    public func mapBuffers(_ queue: Queue, count: Int) throws(V4L2Error) -> [Mapped] {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = bufferType(queue)
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard ioctl(CV4L2_VIDIOC_REQBUFS(), &request) == 0 else { throw failure("VIDIOC_REQBUFS", queue) }
        guard request.count > 0 else {
            throw V4L2Error(
                code: .other, device: path, operation: "VIDIOC_REQBUFS (\(queue.rawValue))",
                hint: "the driver granted no buffers")
        }
        var buffers: [Mapped] = []
        for index in 0..<Int(request.count) {
            var plane = v4l2_plane()
            let (length, offset): (Int, Int)
            var buffer = record(queue, index: index)
            let queried = withUnsafeMutablePointer(to: &plane) { planePointer in
                if multiplanar {
                    buffer.m.planes = planePointer
                    buffer.length = 1
                }
                return ioctl(CV4L2_VIDIOC_QUERYBUF(), &buffer)
            }
            guard queried == 0 else {
                let error = failure("VIDIOC_QUERYBUF", queue)
                for mapped in buffers { node.munmap(mapped.start, length: mapped.length) }
                throw error
            }
            if multiplanar {
                (length, offset) = (Int(plane.length), Int(plane.m.mem_offset))
            } else {
                (length, offset) = (Int(buffer.length), Int(buffer.m.offset))
            }
            switch node.mmap(length: length, offset: Int64(offset)) {
            case .success(let start):
                buffers.append(Mapped(start: start, length: length))
            case .failure(let error):
                for mapped in buffers { node.munmap(mapped.start, length: mapped.length) }
                throw V4L2Error(
                    code: .other, device: path, operation: "mmap (\(queue.rawValue))", errno: error.rawValue)
            }
        }
        mapped[queue] = buffers
        return buffers
    }

    /// Sets `queue` up for `count` buffers imported as DMABUFs (`VIDIOC_REQBUFS` with
    /// `V4L2_MEMORY_DMABUF`), each queued with its descriptor. Returns the count the driver
    /// granted; throws when it cannot import at all.
    public func importBuffers(_ queue: Queue, count: Int) throws(V4L2Error) -> Int {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = bufferType(queue)
        request.memory = V4L2_MEMORY_DMABUF.rawValue
        guard ioctl(CV4L2_VIDIOC_REQBUFS(), &request) == 0 else {
            throw failure("VIDIOC_REQBUFS DMABUF", queue)
        }
        importing.insert(queue)
        return Int(request.count)
    }

    /// Gives `queue`'s buffers back (`VIDIOC_REQBUFS` with a count of 0), so it can be set up
    /// another way. Errors are ignored, as for `streamOff`.
    public func freeBuffers(_ queue: Queue) {
        var request = v4l2_requestbuffers()
        request.type = bufferType(queue)
        request.memory = importing.contains(queue) ? V4L2_MEMORY_DMABUF.rawValue : V4L2_MEMORY_MMAP.rawValue
        _ = ioctl(CV4L2_VIDIOC_REQBUFS(), &request)
        importing.remove(queue)
    }

    private func record(_ queue: Queue, index: Int) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = UInt32(index)
        buffer.type = bufferType(queue)
        buffer.memory = importing.contains(queue) ? V4L2_MEMORY_DMABUF.rawValue : V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    public func streamOn(_ queue: Queue) throws(V4L2Error) {
        var type = Int32(bitPattern: bufferType(queue))
        guard ioctl(CV4L2_VIDIOC_STREAMON(), &type) == 0 else { throw failure("VIDIOC_STREAMON", queue) }
    }

    /// Stops `queue`, taking every buffer back from the driver. Errors are ignored: it is the
    /// way out, and a device that is gone has stopped anyway.
    public func streamOff(_ queue: Queue) {
        var type = Int32(bitPattern: bufferType(queue))
        _ = ioctl(CV4L2_VIDIOC_STREAMOFF(), &type)
    }

    /// A DMABUF to queue in place of a buffer's own memory: its descriptor and length.
    public struct Imported: Sendable {
        public var descriptor: Int32
        public var length: Int

        public init(descriptor: Int32, length: Int) {
            self.descriptor = descriptor
            self.length = length
        }
    }

    /// Hands buffer `index` of `queue` to the driver (`VIDIOC_QBUF`) holding `bytesUsed` bytes
    /// (OUTPUT; 0 for CAPTURE), stamped `timestamp`; on a queue that imports, the memory is
    /// `dmabuf`'s.
    public func queue(
        _ queue: Queue, index: Int, bytesUsed: Int = 0, timestamp: timeval = timeval(), flags: UInt32 = 0,
        dmabuf: Imported? = nil
    ) throws(V4L2Error) {
        var buffer = record(queue, index: index)
        buffer.timestamp = timestamp
        buffer.flags = flags
        var plane = v4l2_plane()
        let length = dmabuf?.length ?? mapped[queue]?[index].length ?? 0
        let result = withUnsafeMutablePointer(to: &plane) { planePointer in
            if multiplanar {
                planePointer.pointee.bytesused = UInt32(bytesUsed)
                planePointer.pointee.length = UInt32(length)
                if let dmabuf { planePointer.pointee.m.fd = dmabuf.descriptor }
                buffer.m.planes = planePointer
                buffer.length = 1
            } else {
                buffer.bytesused = UInt32(bytesUsed)
                buffer.length = UInt32(length)
                if let dmabuf { buffer.m.fd = dmabuf.descriptor }
            }
            return ioctl(CV4L2_VIDIOC_QBUF(), &buffer)
        }
        guard result == 0 else { throw failure("VIDIOC_QBUF", queue) }
    }

    /// What `VIDIOC_DQBUF` gave.
    public enum Dequeue: Sendable {
        case buffer(Dequeued)
        /// No buffer is done yet (EAGAIN).
        case none
        /// The queue gave its last buffer of a drain and has stopped (EPIPE).
        case drained
    }

    /// The next buffer the driver is done with on `queue` (`VIDIOC_DQBUF`).
    public func dequeue(_ queue: Queue) throws(V4L2Error) -> Dequeue {
        var buffer = record(queue, index: 0)
        var plane = v4l2_plane()
        let result = withUnsafeMutablePointer(to: &plane) { planePointer in
            if multiplanar {
                buffer.m.planes = planePointer
                buffer.length = 1
            }
            return ioctl(CV4L2_VIDIOC_DQBUF(), &buffer)
        }
        if result != 0 {
            if errno == EAGAIN { return .none }
            if errno == EPIPE { return .drained }
            throw failure("VIDIOC_DQBUF", queue)
        }
        return .buffer(
            Dequeued(
                index: Int(buffer.index), bytesUsed: Int(multiplanar ? plane.bytesused : buffer.bytesused),
                flags: buffer.flags, timestamp: buffer.timestamp))
    }

    /// A codec's events.
    public enum Event: Sendable, Equatable {
        /// The drain is over (`V4L2_EVENT_EOS`).
        case endOfStream
        /// The coded format changed (`V4L2_EVENT_SOURCE_CHANGE`).
        case sourceChange
        case other(UInt32)
    }

    /// Subscribes to the end of a drain and to source changes (`VIDIOC_SUBSCRIBE_EVENT`), where
    /// the driver has them: encoders often lack source change (vicodec refuses it).
    public func subscribeToEvents() {
        for type in [V4L2_EVENT_EOS, V4L2_EVENT_SOURCE_CHANGE] {
            var subscription = v4l2_event_subscription()
            subscription.type = UInt32(type)
            _ = ioctl(CV4L2_VIDIOC_SUBSCRIBE_EVENT(), &subscription)
        }
    }

    /// The next pending event (`VIDIOC_DQEVENT`), or nil when none is pending.
    public func dequeueEvent() -> Event? {
        var event = v4l2_event()
        guard ioctl(CV4L2_VIDIOC_DQEVENT(), &event) == 0 else { return nil }
        switch event.type {
        case UInt32(V4L2_EVENT_EOS): return .endOfStream
        case UInt32(V4L2_EVENT_SOURCE_CHANGE): return .sourceChange
        default: return .other(event.type)
        }
    }

    /// Starts an encoder's drain (`VIDIOC_ENCODER_CMD` `V4L2_ENC_CMD_STOP`): it codes what it
    /// holds and flags the last coded buffer LAST.
    public func startDrain() throws(V4L2Error) {
        var command = v4l2_encoder_cmd()
        command.cmd = UInt32(V4L2_ENC_CMD_STOP)
        guard ioctl(CV4L2_VIDIOC_ENCODER_CMD(), &command) == 0 else {
            throw failure("VIDIOC_ENCODER_CMD STOP")
        }
    }

    /// What `poll(2)` says after waiting up to `timeoutMs`.
    public struct Readiness: Sendable {
        /// A CAPTURE buffer is done (POLLIN).
        public var capture: Bool
        /// An OUTPUT buffer is done (POLLOUT).
        public var output: Bool
        /// An event is pending (POLLPRI).
        public var event: Bool
        /// The device reported an error (POLLERR): it is gone or stopped.
        public var error: Bool
    }

    public func wait(timeoutMs: Int32) -> Readiness {
        // A failed wait reports nothing ready; the caller's next call says what went wrong.
        let ready = try? node.poll(events: Int16(POLLIN | POLLOUT | POLLPRI), timeoutMs: timeoutMs).get()
        let events = Int32(ready?.node ?? 0)
        return Readiness(
            capture: events & Int32(POLLIN) != 0, output: events & Int32(POLLOUT) != 0,
            event: events & Int32(POLLPRI) != 0, error: events & Int32(POLLERR) != 0)
    }

    /// The fourcc code of a format's name (padded with spaces).
    static func code(_ fourcc: String) -> UInt32 {
        let text = Array(fourcc.utf8) + [UInt8](repeating: 0x20, count: 4)
        return UInt32(text[0]) | UInt32(text[1]) << 8 | UInt32(text[2]) << 16 | UInt32(text[3]) << 24
    }
}
