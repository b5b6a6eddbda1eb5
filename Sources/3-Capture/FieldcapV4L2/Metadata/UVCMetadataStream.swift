import CV4L2
import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A UVC camera's metadata node streamed beside its video node: its payload headers feed the
/// camera's clock model, and each frame's PTS waits here, by sequence, for the frame.
///
/// `uvcvideo` fills a metadata buffer while it fills the frame's and hands both back together,
/// the metadata first, with the frame's sequence number: the camera thread drains this node
/// (without waiting) whenever it has dequeued a frame, before it stamps it.
///
/// Thread-bound (capture).
final class UVCMetadataStream {
    let path: String
    private let node: DeviceNode
    private var buffers: [(start: UnsafeMutableRawPointer, length: Int)] = []
    private var streaming = false
    private var isClosed = false
    private(set) var model = UVCClockModel()
    /// The newest frames' PTS and the STC beside it, by sequence: a few, as a ring.
    private var pending = [(sequence: UInt32, pts: UInt32, stc: UInt32)?](repeating: nil, count: 8)
    private var pendingNext = 0
    /// Buffers `uvcvideo` marked as errors or cut short, for the sidecar.
    private(set) var damagedBuffers = 0
    /// Frames dequeued since the last metadata buffer: a node that stalls while the video flows.
    private(set) var framesWithoutMetadata = 0
    /// Metadata buffers in a row whose headers carried no PTS: a camera whose clock stopped
    /// travelling while its frames still come.
    private(set) var buffersWithoutPTS = 0

    /// The buffer type and format: the corresponding C constants are `V4L2_BUF_TYPE_META_CAPTURE`
    /// and `V4L2_META_FMT_UVC` ('UVCH').
    static let bufferType = V4L2_BUF_TYPE_META_CAPTURE.rawValue
    static let uvcFormat: UInt32 = 0x4843_5655
    static let bufferCount: UInt32 = 8

    /// Opens `path`, asks for `V4L2_META_FMT_UVC`, maps its buffers and queues them: before the
    /// video node has buffers, since `uvcvideo` refuses a change of the metadata format (EBUSY)
    /// after. It starts streaming with `start()`, before the video does: `uvcvideo` fills
    /// metadata buffers only while the metadata queue streams.
    ///
    /// - Throws: `V4L2Error` when the node is not a metadata node or refuses the format.
    init(path: String, calls: any DeviceCalls) throws(V4L2Error) {
        self.path = path
        let (node, identity) = try V4L2Device.open(path, calls: calls)
        self.node = node
        guard identity.capabilities & UInt32(V4L2_CAP_META_CAPTURE) != 0 else {
            close()
            throw V4L2Error(
                code: .notADevice, device: path, operation: "VIDIOC_QUERYCAP",
                hint: "not a metadata node (no V4L2_CAP_META_CAPTURE)")
        }
        do throws(V4L2Error) {
            // V4L2_META_FMT_UVC is uvcvideo's default: asked for only when another program left
            // another format (a RealSense's D4XX).
            var format = v4l2_format()
            format.type = Self.bufferType
            try call("VIDIOC_G_FMT", CV4L2_VIDIOC_G_FMT(), &format)
            if format.fmt.meta.dataformat != Self.uvcFormat {
                format.fmt.meta.dataformat = Self.uvcFormat
                try call("VIDIOC_S_FMT", CV4L2_VIDIOC_S_FMT(), &format)
            }
            guard format.fmt.meta.dataformat == Self.uvcFormat else {
                throw V4L2Error(
                    code: .unsupported, device: path, operation: "VIDIOC_S_FMT",
                    hint: "the driver would not give V4L2_META_FMT_UVC")
            }
            var request = v4l2_requestbuffers()
            request.count = Self.bufferCount
            request.type = Self.bufferType
            request.memory = V4L2_MEMORY_MMAP.rawValue
            try call("VIDIOC_REQBUFS", CV4L2_VIDIOC_REQBUFS(), &request)
            for index in 0..<request.count {
                var buffer = Self.buffer(index)
                try call("VIDIOC_QUERYBUF", CV4L2_VIDIOC_QUERYBUF(), &buffer)
                switch node.mmap(length: Int(buffer.length), offset: Int64(buffer.m.offset)) {
                case .success(let start): buffers.append((start, Int(buffer.length)))
                case .failure(let error):
                    throw V4L2Error(code: .other, device: path, operation: "mmap", errno: error.rawValue)
                }
                try call("VIDIOC_QBUF", CV4L2_VIDIOC_QBUF(), &buffer)
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Starts the metadata queue (`VIDIOC_STREAMON`).
    func start() throws(V4L2Error) {
        var type = Int32(Self.bufferType)
        try call("VIDIOC_STREAMON", CV4L2_VIDIOC_STREAMON(), &type)
        streaming = true
    }

    /// Dequeues every metadata buffer that is ready (none is waited for), feeds its headers to
    /// the clock model, keeps its PTS under its sequence, and queues it again.
    ///
    /// - Throws: `V4L2Error` when the node fails (gone with its camera, or an error other than
    ///   nothing being ready): the caller goes on without it.
    func drain() throws(V4L2Error) {
        framesWithoutMetadata += 1
        while true {
            var buffer = Self.buffer(0)
            if let error = node.ioctl(CV4L2_VIDIOC_DQBUF(), &buffer) {
                if error == .wouldBlock { return }
                if error == .interrupted { continue }
                throw .ioctl("VIDIOC_DQBUF", device: path, errno: error.rawValue)
            }
            framesWithoutMetadata = 0
            let index = Int(buffer.index)
            if index < buffers.count {
                take(
                    buffer,
                    bytes: UnsafeRawBufferPointer(
                        start: buffers[index].start,
                        count: min(
                            Int(buffer.bytesused), buffers[index].length)))
            }
            try call("VIDIOC_QBUF", CV4L2_VIDIOC_QBUF(), &buffer)
        }
    }

    /// The PTS of the frame with `sequence` mapped to the host's clock, once: nil when its
    /// metadata did not come, carried no PTS, or the model cannot map yet.
    func exposureStart(ofSequence sequence: UInt32) -> UVCClockModel.Mapped? {
        for slot in pending.indices {
            guard let entry = pending[slot], entry.sequence == sequence else { continue }
            pending[slot] = nil
            return model.map(pts: entry.pts, besideSTC: entry.stc)
        }
        return nil
    }

    /// The camera went away: its clock starts again when it comes back.
    func forgetClock() {
        model.restart()
        for slot in pending.indices { pending[slot] = nil }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        if streaming {
            var type = Int32(Self.bufferType)
            _ = node.ioctl(CV4L2_VIDIOC_STREAMOFF(), &type)
            streaming = false
        }
        for buffer in buffers { node.munmap(buffer.start, length: buffer.length) }
        buffers = []
        node.close()
    }

    private func take(_ buffer: v4l2_buffer, bytes: UnsafeRawBufferPointer) {
        var first: (pts: UInt32, stc: UInt32)?
        var sawPTS = false
        let stray = UVCMetadata.forEachHeader(in: bytes) { header in
            model.add(header)
            if header.pts != nil { sawPTS = true }
            // The frame's PTS is in its first payload; the STC beside it unwraps it.
            if first == nil, let pts = header.pts, let stc = header.stc { first = (pts, stc) }
        }
        if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 || stray != 0 { damagedBuffers += 1 }
        if let first {
            pending[pendingNext] = (buffer.sequence, first.pts, first.stc)
            pendingNext = (pendingNext + 1) % pending.count
        }
        buffersWithoutPTS = sawPTS ? 0 : buffersWithoutPTS + 1
    }

    private func call<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws(V4L2Error) {
        if let error = node.ioctl(request, &argument) { throw .ioctl(name, device: path, errno: error.rawValue) }
    }

    private static func buffer(_ index: UInt32) -> v4l2_buffer { V4L2Device.buffer(index, type: bufferType) }
}
