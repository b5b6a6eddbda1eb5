/// Why faces could not be covered: the detector's library or model missing or damaged, a frame
/// it cannot read, a recorded frame that does not decode. One line that says what to do.
public struct FaceCoverError: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    /// A recorded frame that does not decode (the session is damaged), not a failure of the cover.
    public let damagedFrame: Bool

    public init(_ description: String, damagedFrame: Bool = false) {
        self.description = description
        self.damagedFrame = damagedFrame
    }

    /// A C library's message, from its NUL-terminated buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
