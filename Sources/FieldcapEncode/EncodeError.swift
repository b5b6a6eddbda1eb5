/// Why a camera's frames cannot be encoded (no preview, no `encode=`), or a frame gave no JPEG.
public struct EncodeError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable {
        /// The camera's pixel format has no JPEG path (Y16, Z16).
        case unsupportedFormat
        /// libjpeg-turbo failed, or the frame was not what its format says.
        case encoder
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
