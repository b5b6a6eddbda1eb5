import CV4L2
import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Setting a camera up to stream: the format, the rate and the mmap buffers, each asked for and
/// then read back as the driver granted it.
extension V4L2Device {
    /// Asks for `pixelFormat` at `size` (640x480 when nil) and returns what the driver granted.
    /// The corresponding ioctl is `VIDIOC_S_FMT`.
    ///
    /// - Throws: a `DeviceError` when the camera lacks the format, the driver swaps it for
    ///   another, or it grants another size than the one asked for.
    func setFormat(
        _ pixelFormat: VideoFormat.PixelFormat, size: (width: Int, height: Int)?
    ) throws(V4L2Error) -> VideoFormat {
        let fourcc = Self.fourcc(pixelFormat)
        let offered = pixelFormatCodes()
        guard offered.contains(pixelFormat.rawValue) else {
            throw V4L2Error(
                code: .unsupported, device: path, operation: "VIDIOC_S_FMT",
                hint: "the camera has no \(pixelFormat.rawValue); it offers \(offered.joined(separator: ", "))"
                    + " (`fieldcap list`)")
        }
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.pixelformat = fourcc
        format.fmt.pix.width = UInt32(size?.width ?? 640)
        format.fmt.pix.height = UInt32(size?.height ?? 480)
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try call("VIDIOC_S_FMT", CV4L2_VIDIOC_S_FMT(), &format)
        guard format.fmt.pix.pixelformat == fourcc else {
            throw V4L2Error(
                code: .unsupported, device: path, operation: "VIDIOC_S_FMT",
                hint: "the driver would not use \(pixelFormat.rawValue)")
        }
        let granted = VideoFormat(
            width: Int(format.fmt.pix.width), height: Int(format.fmt.pix.height), pixelFormat: pixelFormat)
        if let size, size.width != granted.width || size.height != granted.height {
            throw V4L2Error(
                code: .unsupported, device: path, operation: "VIDIOC_S_FMT",
                hint: "asked for \(size.width)x\(size.height), the driver granted \(granted.width)x\(granted.height);"
                    + " pick a size `fieldcap list` shows")
        }
        return granted
    }

    /// Where a camera's frame rate came from.
    public enum RateChoice: String, Sendable {
        /// `fps=` asked for it.
        case asked
        /// fieldcap's default: 30 fps, which the camera lists for the granted format and size.
        case standard
        /// The camera does not list 30 fps for the format and size: the highest rate it lists.
        case highestListed
        /// The camera lists no discrete rates: the rate it was at.
        case current
    }

    /// The rate to ask for when none was given: 30 fps where the camera lists it for `format`
    /// (the rate VI-SLAM datasets and the ROS camera drivers use), else the highest it lists, else
    /// nil (keep what it runs at). Not the camera's current rate: that is whatever the last program
    /// left, and a UVC camera resets it to the mode's default at VIDIOC_S_FMT anyway.
    func defaultRate(for format: VideoFormat) -> (rate: Double?, choice: RateChoice) {
        let listed = rates(Self.fourcc(format.pixelFormat), format.width, format.height)
        if listed.contains(where: { abs($0 - 30) < 0.01 }) { return (30, .standard) }
        if let highest = listed.max() { return (highest, .highestListed) }
        return (nil, .current)
    }

    /// Asks for `rate` frames per second (nil: keeps the current rate) and returns the rate the
    /// driver granted (0 when it reports none). The corresponding ioctls are `VIDIOC_S_PARM` and
    /// `VIDIOC_G_PARM`.
    func setRate(_ rate: Double?) throws(V4L2Error) -> Double {
        var parameters = v4l2_streamparm()
        parameters.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        if let rate {
            parameters.parm.capture.timeperframe = v4l2_fract(
                numerator: 1000, denominator: UInt32((rate * 1000).rounded()))
            try call("VIDIOC_S_PARM", CV4L2_VIDIOC_S_PARM(), &parameters)
        } else {
            try call("VIDIOC_G_PARM", CV4L2_VIDIOC_G_PARM(), &parameters)
        }
        let frame = parameters.parm.capture.timeperframe
        return frame.numerator > 0 ? Double(frame.denominator) / Double(frame.numerator) : (rate ?? 0)
    }

    /// Requests `count` mmap buffers (the driver may grant another number) and maps each; also
    /// returns the buffers' flags as the driver set them up, which say how it stamps them (the
    /// clock, start of exposure or end of frame: constant for the stream). The corresponding
    /// ioctls are `VIDIOC_REQBUFS` and `VIDIOC_QUERYBUF`, then `v4l2_mmap`.
    func mapBuffers(
        count: Int
    ) throws(V4L2Error) -> (buffers: [(start: UnsafeMutableRawPointer, length: Int)], flags: UInt32) {
        var request = v4l2_requestbuffers()
        request.count = UInt32(count)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        try call("VIDIOC_REQBUFS", CV4L2_VIDIOC_REQBUFS(), &request)
        guard request.count > 0 else {
            throw V4L2Error(
                code: .unsupported, device: path, operation: "VIDIOC_REQBUFS", hint: "the driver granted no buffers")
        }
        var buffers: [(start: UnsafeMutableRawPointer, length: Int)] = []
        var flags: UInt32 = 0
        for index in 0..<request.count {
            var buffer = Self.buffer(index)
            if let error = node.ioctl(CV4L2_VIDIOC_QUERYBUF(), &buffer) {
                for mapped in buffers { node.munmap(mapped.start, length: mapped.length) }
                throw .ioctl("VIDIOC_QUERYBUF", device: path, errno: error.rawValue)
            }
            switch node.mmap(length: Int(buffer.length), offset: Int64(buffer.m.offset)) {
            case .success(let start):
                buffers.append((start, Int(buffer.length)))
            case .failure(let error):
                for mapped in buffers { node.munmap(mapped.start, length: mapped.length) }
                throw V4L2Error(code: .other, device: path, operation: "mmap", errno: error.rawValue)
            }
            flags = buffer.flags
        }
        return (buffers, flags)
    }

    /// The granted format's line length and frame size (`VIDIOC_G_FMT`), or nil if the driver
    /// does not say.
    func layout() -> (bytesPerLine: Int, sizeImage: Int)? {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        guard succeeds(CV4L2_VIDIOC_G_FMT(), &format) else { return nil }
        return (Int(format.fmt.pix.bytesperline), Int(format.fmt.pix.sizeimage))
    }

    /// Exports the first `count` mmap buffers as DMABUF file descriptors (`VIDIOC_EXPBUF`,
    /// close-on-exec, read-only: a device that imports them only reads frames), or nil when the
    /// driver cannot (its buffers are not shareable, or it lacks the ioctl). The caller closes them.
    func exportBuffers(count: Int) -> [Int32]? {
        var descriptors: [Int32] = []
        for index in 0..<count {
            var export = v4l2_exportbuffer()
            export.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            export.index = UInt32(index)
            export.flags = UInt32(O_CLOEXEC | O_RDONLY)
            guard succeeds(CV4L2_VIDIOC_EXPBUF(), &export) else {
                for descriptor in descriptors { Glibc.close(descriptor) }
                return nil
            }
            descriptors.append(export.fd)
        }
        return descriptors
    }

    /// A buffer record for `index`, mmap memory, of `type` (video capture unless told).
    static func buffer(_ index: UInt32, type: UInt32 = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue) -> v4l2_buffer {
        var buffer = v4l2_buffer()
        buffer.index = index
        buffer.type = type
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        return buffer
    }

    /// The fourcc code of a pixel format (its name, padded with spaces).
    static func fourcc(_ format: VideoFormat.PixelFormat) -> UInt32 {
        let text = Array(format.rawValue.utf8) + [UInt8](repeating: 0x20, count: 4)
        return UInt32(text[0]) | UInt32(text[1]) << 8 | UInt32(text[2]) << 16 | UInt32(text[3]) << 24
    }
}
