import ArgumentParser
import FieldcapSession
import FoundationEssentials
import SyncField

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a session (or a segmented recording) against every rule of the SyncField 0.1 format.",
        discussion: """
            Parses every line of every stream file and checks keys, their order and types, the \
            number and string spellings the SDK produces, non-decreasing capture_ns, \
            clock_domain == host_id, sensor lines against their timestamp lines, and the \
            manifest and sync point against the files. Each video the manifest links must \
            exist, be Matroska with a video track, and hold frame_count frames (counted from \
            the blocks' headers, without decoding); a linked path that no longer exists is \
            looked for under its file name in the session directory. In a session fieldcap \
            finished, a stream with no record for longer than the larger of 2 s and 50 periods \
            must be documented in fieldcap.json (an away entry, ended_early_at, or the records \
            missing across it in drops or the device's gaps), and each away entry must be well \
            formed.

            A recording made with --segment is checked segment by segment: every segment its \
            recording.json lists as on disk must be there and valid, every deleted one gone.

            Each problem is printed as FILE:LINE: MESSAGE. Exit status: 0 when the session is \
            valid, 1 when it has problems, 64 for a usage error.
            """
    )

    @Argument(help: "The session directory (the one holding manifest.json).", completion: .directory)
    var directory: String

    @Flag(name: .shortAndLong, help: "Print only problems, not the summary line.")
    var quiet = false

    func validate() throws {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ValidationError(
                "\(directory) does not exist; give the session directory (the one holding manifest.json)")
        }
        guard isDirectory else {
            throw ValidationError("\(directory) is a file; give the session directory (the one holding manifest.json)")
        }
    }

    func run() throws {
        let progress = ValidationProgressLine(quiet: quiet)
        if let recording = RecordingValidator.validate(directory: directory, progress: progress.show) {
            progress.line.erase()
            for problem in recording.problems { print("\(directory)/\(problem)") }
            for warning in recording.warnings where !quiet { print("\(directory)/\(warning) (warning)") }
            guard recording.isValid else {
                print("\(directory): \(recording.problems.count) problem\(recording.problems.count == 1 ? "" : "s")")
                throw ExitCode(1)
            }
            if !quiet {
                print(
                    "\(directory): valid recording, \(recording.segmentsValid) segments (each a valid SyncField "
                        + "0.1 session, \(recording.lineCount) timestamp lines in all), \(recording.deletedSummary)"
                )
            }
            return
        }
        let report = SessionValidator.validateWithVideos(directory: directory, progress: progress.show)
        progress.line.erase()
        for problem in report.problems { print("\(directory)/\(problem)") }
        for warning in report.warnings where !quiet { print("\(directory)/\(warning) (warning)") }
        if report.isValid {
            if !quiet {
                print(
                    "\(directory): valid SyncField 0.1 session, \(report.streamCount) "
                        + "streams, \(report.lineCount) timestamp lines"
                )
            }
        } else {
            print("\(directory): \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s")")
            throw ExitCode(1)
        }
    }
}

/// "validating imu.jsonl: 42% of 310.2M" on the terminal's stderr, redrawn at most twice a
/// second, for sessions that take a while (an hour of a 1 kHz IMU: about 90 s).
final class ValidationProgressLine {
    let line = TerminalLine()
    private let enabled: Bool
    private var lastDrawn: UInt64 = 0

    init(quiet: Bool) { enabled = !quiet && line.isTerminal }

    func show(_ progress: SessionValidator.Progress) {
        guard enabled else { return }
        let now = MonotonicClock.now()
        // Nothing for a session read in under half a second; then every half second.
        if lastDrawn == 0 { lastDrawn = now; return }
        guard now &- lastDrawn >= 500_000_000 else { return }
        lastDrawn = now
        let percent = progress.bytesTotal > 0 ? 100 * progress.bytesDone / progress.bytesTotal : 100
        let total = ByteSize(bytes: UInt64(progress.bytesTotal))
        line.draw("validating \(progress.file): \(percent)% of \(total)")
    }
}
