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

extension PlanError {
    /// The error as the command line reports a device or config problem: one line on stderr
    /// naming the argument, and exit status 64 (a usage error). ArgumentParser's own usage
    /// errors add the usage text, which buries the one line that matters here.
    func exitForCommand() -> ExitCode {
        say("Error: \(message)")
        return ExitCode(64)
    }
}
