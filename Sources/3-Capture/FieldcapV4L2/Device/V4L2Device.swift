import CV4L2
import FieldcapCore
import FieldcapSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An open V4L2 node, checked to be a camera that can stream.
///
/// Thread-bound: one owner at a time.
public final class V4L2Device {
    /// What `VIDIOC_QUERYCAP` says about the node.
    public struct Identity: Sendable, Equatable {
        public var driver: String
        public var card: String
        public var bus: String
        /// The node's own capabilities (`device_caps` when the driver gives them).
        public var capabilities: UInt32

        /// The corresponding C constants are `V4L2_CAP_VIDEO_CAPTURE` and `V4L2_CAP_STREAMING`.
        public var canCapture: Bool { capabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
        public var canStream: Bool { capabilities & UInt32(V4L2_CAP_STREAMING) != 0 }
    }

    /// One pixel format and the sizes and rates the device offers for it.
    public struct FormatDescription: Sendable, Equatable {
        public var fourcc: String
        public var description: String
        public var compressed: Bool
        public var sizes: [FrameSize]
    }

    public enum FrameSize: Sendable, Equatable, CustomStringConvertible {
        /// A fixed size and its frame intervals as frames per second.
        case discrete(width: Int, height: Int, rates: [Double])
        /// Any size in a range, in steps.
        case stepwise(minWidth: Int, maxWidth: Int, stepWidth: Int, minHeight: Int, maxHeight: Int, stepHeight: Int)

        public var description: String {
            switch self {
            case let .discrete(width, height, rates):
                let fps = rates.map { $0 == $0.rounded() ? String(Int($0)) : cFormat("%.2f", $0) }
                return "\(width)x\(height)" + (fps.isEmpty ? "" : " @ " + fps.joined(separator: ", ") + " fps")
            case let .stepwise(minWidth, maxWidth, stepWidth, minHeight, maxHeight, stepHeight):
                return "\(minWidth)-\(maxWidth) (step \(stepWidth)) x \(minHeight)-\(maxHeight) (step \(stepHeight))"
            }
        }
    }

    public let path: String
    public let identity: Identity
    /// The open node and the calls that reach it: libv4l2's, or a test's script.
    let node: DeviceNode

    /// Opens `path` through `calls` (libv4l2 unless a test plays the driver) and checks it is a
    /// V4L2 capture device that can stream.
    ///
    /// - Throws: `V4L2Error` naming the device, the operation and what to do.
    public init(path: String, calls: any DeviceCalls = LibV4L2Calls()) throws(V4L2Error) {
        self.path = path
        var info = stat()
        if stat(path, &info) == 0 && (info.st_mode & S_IFMT) != S_IFCHR {
            let what = (info.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "a regular file"
            throw V4L2Error(
                code: .notADevice, device: path, operation: "open", errno: 0,
                hint: "this is \(what), not a device node; cameras are /dev/video* (`fieldcap list`)")
        }
        (node, identity) = try Self.open(path, calls: calls)
        // Every stored property is set: a throw from here on runs deinit, which closes the node.
        guard identity.canCapture else {
            throw V4L2Error(
                code: .notADevice, device: path, operation: "VIDIOC_QUERYCAP", errno: 0,
                hint: "\(identity.card) (\(identity.driver)) has no video capture on this node;"
                    + " cameras are listed by `fieldcap list`")
        }
        guard identity.canStream else {
            throw V4L2Error(
                code: .notADevice, device: path, operation: "VIDIOC_QUERYCAP", errno: 0,
                hint: "\(identity.card) (\(identity.driver)) cannot stream (no V4L2_CAP_STREAMING)")
        }
    }

    deinit {
        if !isClosed { node.close() }
    }

    private var isClosed = false

    /// Closes the node before the device object goes: a camera that lost its device lets it go
    /// at once, so that its driver can be unloaded or its node number taken again meanwhile.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        node.close()
    }

    /// Opens `path` and asks what it is (`VIDIOC_QUERYCAP`): what a camera and a codec device
    /// both do first. The node is closed again if the question fails.
    static func open(_ path: String, calls: any DeviceCalls) throws(V4L2Error) -> (DeviceNode, Identity) {
        let node: DeviceNode
        switch DeviceNode.open(path, flags: O_RDWR | O_NONBLOCK, calls: calls) {
        case .success(let opened): node = opened
        case .failure(let error): throw .open(device: path, errno: error.rawValue)
        }
        var capability = v4l2_capability()
        if let error = node.ioctl(CV4L2_VIDIOC_QUERYCAP(), &capability) {
            node.close()
            throw .ioctl("VIDIOC_QUERYCAP", device: path, errno: error.rawValue)
        }
        let caps =
            capability.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0
            ? capability.device_caps : capability.capabilities
        let identity = Identity(
            driver: string(capability.driver), card: string(capability.card), bus: string(capability.bus_info),
            capabilities: caps)
        return (node, identity)
    }

    /// `request` on the node; a failure is an error naming the device and `name`.
    func call<Argument>(_ name: String, _ request: UInt, _ argument: inout Argument) throws(V4L2Error) {
        if let error = node.ioctl(request, &argument) { throw .ioctl(name, device: path, errno: error.rawValue) }
    }

    /// `request` on the node, for the calls whose failure only ends an enumeration.
    func succeeds<Argument>(_ request: UInt, _ argument: inout Argument) -> Bool {
        node.ioctl(request, &argument) == nil
    }

    static func string<T>(_ tuple: T) -> String {
        withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    static func fourcc(_ code: UInt32) -> String {
        // Bit 31 marks a big-endian variant (`v4l2_fourcc_be`).
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: (code & 0x7FFF_FFFF) >> (8 * $0)) }
        return String(decoding: bytes.filter { $0 != 0x20 }, as: UTF8.self) + (code & 0x8000_0000 != 0 ? "-BE" : "")
    }

    /// The capture formats' fourccs (`VIDIOC_ENUM_FMT` alone): what opening a camera needs. Its
    /// sizes and rates are left to `formats()`, since enumerating them all (vivid: about 6,000
    /// ioctls) is most of a camera's start-up on a slow CPU.
    public func pixelFormatCodes() -> [String] {
        formatDescriptions().map { Self.fourcc($0.pixelformat) }
    }

    /// What `VIDIOC_ENUM_FMT` says of each capture format.
    private func formatDescriptions() -> [v4l2_fmtdesc] {
        var descriptions: [v4l2_fmtdesc] = []
        var description = v4l2_fmtdesc()
        description.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        while succeeds(CV4L2_VIDIOC_ENUM_FMT(), &description) {
            descriptions.append(description)
            description.index += 1
        }
        return descriptions
    }

    /// Every capture format with its sizes and frame rates (`VIDIOC_ENUM_FMT`,
    /// `VIDIOC_ENUM_FRAMESIZES`, `VIDIOC_ENUM_FRAMEINTERVALS`).
    public func formats() -> [FormatDescription] {
        formatDescriptions().map { description in
            FormatDescription(
                fourcc: Self.fourcc(description.pixelformat), description: Self.string(description.description),
                compressed: description.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                sizes: sizes(of: description.pixelformat))
        }
    }

    private func sizes(of pixelFormat: UInt32) -> [FrameSize] {
        var sizes: [FrameSize] = []
        var index: UInt32 = 0
        while true {
            var size = v4l2_frmsizeenum()
            size.index = index
            size.pixel_format = pixelFormat
            guard succeeds(CV4L2_VIDIOC_ENUM_FRAMESIZES(), &size) else { break }
            if size.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                let width = Int(size.discrete.width), height = Int(size.discrete.height)
                sizes.append(.discrete(width: width, height: height, rates: rates(pixelFormat, width, height)))
            } else {
                let s = size.stepwise
                sizes.append(
                    .stepwise(
                        minWidth: Int(s.min_width), maxWidth: Int(s.max_width), stepWidth: Int(s.step_width),
                        minHeight: Int(s.min_height), maxHeight: Int(s.max_height), stepHeight: Int(s.step_height)))
                break
            }
            index += 1
        }
        return sizes
    }

    func rates(_ pixelFormat: UInt32, _ width: Int, _ height: Int) -> [Double] {
        var rates: [Double] = []
        var index: UInt32 = 0
        while true {
            var interval = v4l2_frmivalenum()
            interval.index = index
            interval.pixel_format = pixelFormat
            interval.width = UInt32(width)
            interval.height = UInt32(height)
            guard succeeds(CV4L2_VIDIOC_ENUM_FRAMEINTERVALS(), &interval),
                interval.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            else { break }
            let fraction = interval.discrete
            if fraction.numerator > 0 { rates.append(Double(fraction.denominator) / Double(fraction.numerator)) }
            index += 1
        }
        return rates
    }

    /// The `/dev/video*` nodes present, in numeric order.
    public static func nodes(in directory: String = "/dev") -> [String] {
        guard let entries = try? FileManagerLite.contents(of: directory) else { return [] }
        return entries.filter { $0.hasPrefix("video") && Int($0.dropFirst(5)) != nil }
            .sorted { Int($0.dropFirst(5))! < Int($1.dropFirst(5))! }
            .map { "\(directory)/\($0)" }
    }
}

/// Directory listing without Foundation (this module only needs this).
enum FileManagerLite {
    static func contents(of path: String) throws -> [String] {
        guard let directory = opendir(path) else {
            throw V4L2Error(code: .other, device: path, operation: "opendir", errno: errno, hint: "")
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = V4L2Device.string(entry.pointee.d_name)
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
