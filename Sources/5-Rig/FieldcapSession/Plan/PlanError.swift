/// A device spec, a rig config or a plan that cannot be used as written: one line that names the
/// argument or the config line, and what to do. Front ends print it as it is and exit with a usage
/// status; nothing has been opened or written.
public struct PlanError: Error, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(_ message: String) { self.message = message }
}

/// A device that exists but cannot be set up as asked (missing, busy, refused a format, rate or
/// channel): not a mistake in the spec's syntax, but still one line and a usage status.
public struct DeviceSetupError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
