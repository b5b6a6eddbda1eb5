import Logging

/// A swift-log handler that gives each message, as its text alone, to a front end's printer:
/// how a library's notices (a segment deleted, the rig announced, a fleet command refused)
/// reach the user as the lines the front end prints, while the library only holds a `Logger`.
/// Messages below `logLevel` (notice by default) are dropped.
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let printer: @Sendable (String) -> Void

    public init(logLevel: Logger.Level = .notice, _ printer: @escaping @Sendable (String) -> Void) {
        self.logLevel = logLevel
        self.printer = printer
    }

    public func log(event: LogEvent) {
        printer(event.message.description)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

extension Logger {
    /// A logger whose notices and worse go, as plain lines, to `printer`.
    public static func lines(label: String, _ printer: @escaping @Sendable (String) -> Void) -> Logger {
        Logger(label: label) { _ in LineLogHandler(printer) }
    }

    /// A logger that drops everything: a library's default when its caller hands in none.
    public static func silent(label: String) -> Logger {
        Logger(label: label) { _ in SwiftLogNoOpLogHandler() }
    }
}
