import FieldcapCore
import FieldcapV4L2

/// The machine's V4L2 encoders: memory-to-memory nodes whose CAPTURE queue makes a coded format.
public enum V4L2Encoders {
    /// One encoder node: what it makes and from what.
    public struct Found: Sendable {
        public var path: String
        public var driver: String
        public var card: String
        /// Coded formats (CAPTURE), e.g. H264.
        public var codes: [String]
        /// Raw formats it takes (OUTPUT), e.g. NV12, YUYV.
        public var takes: [String]
    }

    /// Every encoder among the `/dev/video*` nodes, in node order. Nodes that cannot be opened
    /// (busy, no permission) are left out.
    public static func all(in directory: String = "/dev") -> [Found] {
        V4L2Device.nodes(in: directory).compactMap { path in
            guard let device = try? V4L2CodecDevice(path: path) else { return nil }
            let coded = device.formats(.capture).filter(\.compressed).map(\.fourcc)
            guard !coded.isEmpty else { return nil }
            return Found(
                path: path, driver: device.identity.driver, card: device.identity.card, codes: coded,
                takes: device.formats(.output).map(\.fourcc))
        }
    }

    /// The first encoder that makes `codec` from `pixelFormat` frames.
    public static func find(_ codec: HardwareEncoding.Codec, from pixelFormat: VideoFormat.PixelFormat) -> Found? {
        all().first { $0.codes.contains(codec.fourcc) && $0.takes.contains(pixelFormat.rawValue) }
    }

    /// Why no encoder was found, and what to do.
    static func noneFound(_ codec: HardwareEncoding.Codec, from pixelFormat: VideoFormat.PixelFormat) -> String {
        let encoders = all()
        guard !encoders.isEmpty else {
            return
                "encode=\(codec.rawValue): this machine has no V4L2 encoder (no "
                + "memory-to-memory node makes a coded format); use encode=jpeg or encode=ffv1"
        }
        let makers = encoders.filter { $0.codes.contains(codec.fourcc) }
        guard !makers.isEmpty else {
            return
                "encode=\(codec.rawValue): no V4L2 encoder makes \(codec.fourcc); this machine's make "
                + "\(Set(encoders.flatMap(\.codes)).sorted().joined(separator: ", ")) (`fieldcap list`)"
        }
        return
            "encode=\(codec.rawValue): no \(codec.fourcc) encoder takes \(pixelFormat.rawValue) frames "
            + "(\(makers.map { "\($0.path) takes \($0.takes.joined(separator: ", "))" }.joined(separator: "; "))): "
            + "pick the camera's format=accordingly"
    }
}
