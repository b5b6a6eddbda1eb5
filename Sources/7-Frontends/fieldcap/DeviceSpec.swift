import ArgumentParser
import FieldcapClockQuality
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

/// `--wall-clock auto|chrony[:SOCKET]|ptp[:SOCKET]|none`.
extension ClockQualityReader.Source: ExpressibleByArgument {
    public static var defaultCompletionKind: CompletionKind { .default }
}

/// The one help text of `--wall-clock`, for `record` and `serve`.
let wallClockHelp = ArgumentHelp(
    "How the wall clock's discipline is read at each sync point, for fieldcap.json's wall_clock "
        + "(the bound on its error that aligning several hosts rests on): auto asks chronyd through "
        + "chronyc and ptp4l at /var/run/ptp4l through pmc; chrony[:SOCKET] and ptp[:SOCKET] ask one; "
        + "none asks nothing. A daemon that is absent or silent is noted there, never an error.",
    valueName: "auto|chrony[:SOCKET]|ptp[:SOCKET]|none")

extension PlanError {
    /// The error as the command line reports a device or config problem: one line on stderr
    /// naming the argument, and exit status 64 (a usage error). ArgumentParser's own usage
    /// errors add the usage text, which buries the one line that matters here.
    func exitForCommand() -> ExitCode {
        sayValidationError(message)
        return ExitCode(64)
    }
}
