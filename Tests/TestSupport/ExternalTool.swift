import Foundation

/// A tool a test runs (ffprobe, ffmpeg) that is not installed.
public struct ExternalToolMissing: Error, CustomStringConvertible {
    public var tool: String
    /// The Debian package that has it.
    public var package = "ffmpeg"
    public var description: String {
        "\(tool) is not installed; scripts/install-deps installs it (Debian package \(package))"
    }

    public init(tool: String, package: String = "ffmpeg") {
        self.tool = tool
        self.package = package
    }
}

/// Runs a tool (ffprobe, ffmpeg, chronyc, mosquitto_sub...) and returns its status and output
/// (stdout and stderr together). A missing tool is an error: the test fails, it is not skipped.
public func runTool(
    _ tool: String, _ arguments: [String], package: String? = nil
) throws -> (status: Int32, output: String) {
    let path = ["/usr/bin/\(tool)", "/usr/local/bin/\(tool)", "/usr/sbin/\(tool)"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    guard let path else {
        throw ExternalToolMissing(tool: tool, package: package ?? "ffmpeg")
    }
    let run = try runExecutable(path, arguments)
    return (run.status, run.output)
}

/// How a process ended: its status (the signal's number when `signalled`) and its output.
public struct ExecutableRun: Sendable {
    public var status: Int32
    /// Ended by a signal: a crash, or a kill.
    public var signalled: Bool
    /// stdout and stderr together.
    public var output: String
}

/// Runs the program at `path` to its end.
public func runExecutable(_ path: String, _ arguments: [String]) throws -> ExecutableRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ExecutableRun(
        status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
        output: String(decoding: data, as: UTF8.self))
}
