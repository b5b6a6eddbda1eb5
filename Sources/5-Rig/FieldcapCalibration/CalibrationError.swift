/// A calibration that cannot be used: one line that names the file (and the camera and the
/// line, when known), says what is wrong and what to do.
public struct CalibrationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    /// A value quoted from the file may hold a line break; the message stays one line, as a log
    /// line and a terminal error line both assume.
    public init(_ message: String) {
        self.message = message.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
