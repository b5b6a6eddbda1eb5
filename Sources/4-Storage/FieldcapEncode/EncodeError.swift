/// Why a camera's frames cannot be encoded or decoded (no preview, no `encode=`, no codec
/// library), or a frame gave no JPEG or FFV1.
public struct EncodeError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable {
        /// The camera's pixel format has no JPEG path (Y16, Z16).
        case unsupportedFormat
        /// The codec's library failed, or the frame was not what its format says.
        case encoder
        /// The codec's library is not on this machine (libavcodec for FFV1).
        case unavailable
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
