import ArgumentParser
import FieldcapSession

// The plan's types on the command line: the quantities as option values, plan errors as usage
// errors (one line, exit 64).

/// `--duration`, `--sync-every`: the plan's `TimeSpan`, under the name the options use.
typealias Duration = TimeSpan

extension TimeSpan: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
    public static var defaultCompletionKind: CompletionKind { .default }
}

extension ByteSize: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
    public static var defaultCompletionKind: CompletionKind { .default }
}

extension ValidationError {
    /// A plan's error, as ArgumentParser reports a usage error.
    init(_ error: PlanError) { self.init(error.message) }
}
