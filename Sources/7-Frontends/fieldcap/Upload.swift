import ArgumentParser
import Dispatch
import FieldcapArchive
import FieldcapCore
import FieldcapSession
import FieldcapSyncService
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

struct Upload: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Send sessions to the SyncField service (POST /api/v1/sync/upload) and print its answer.",
        discussion: """
            The file-upload mode of the SyncField alignment service, as the SDK README's curl \
            example sends it: a `files` part and a `timestamp_files` part per stream (a video \
            sends its video; a sensor stream its {id}.jsonl), then `stream_ids` and `host_ids` \
            (comma-separated, one per file, in the files' order) and `primary_id`. The files go \
            from disk to the network a chunk at a time, never whole into memory, with a \
            progress line on standard error; the service's answer goes to standard output.

              fieldcap upload sessions/rig-20261123T140200Z --to http://aligner:8080

            Sessions, --primary and the multi-host rules are those of `fieldcap request`.

            --blur-faces uploads each session with the faces in its cameras' frames covered \
            (as `fieldcap extract --blur-faces` writes it: the same frames, numbers and \
            times): a covered copy is written beside the session first, sent, and removed; \
            the session itself is never changed. A camera whose faces cannot be covered \
            (H.264, HEVC, FWHT) stops the upload before anything is covered or sent \
            (exit 64). The copies an upload killed midway left are removed by the next.

              fieldcap upload sessions/rig-20261123T140200Z --to http://aligner:8080 \\
                  --blur-faces

            Exit status: 0 when the service accepted it (2xx); 1 when it answered with an \
            error (its status and message are shown); 64 for a usage error; 66 when a session \
            cannot be read; 69 when the service cannot be reached or the connection is lost.
            """)

    @Argument(help: "Finished SyncField sessions (fieldcap's or the SDK's), one per host.", completion: .directory)
    var sessions: [String]

    @Option(help: ArgumentHelp("The SyncField service's base URL.", valueName: "http://HOST:8080"))
    var to: String

    @Option(
        help: ArgumentHelp(
            "The primary video's stream id (HOST/ID where several hosts have it); default: the first video.",
            valueName: "STREAM"))
    var primary: String?

    @OptionGroup var faces: FaceOptions

    func run() throws {
        let uploader = SyncUploader(service: to)
        do {
            _ = try uploader.endpoint()
        } catch {
            throw PlanError(error.description).exitForCommand()
        }
        let settings = try faces.settings()
        var scratch: [String] = []
        defer { for directory in scratch { try? FileManager.default.removeItem(atPath: directory) } }
        var uploaded = sessions
        if let settings {
            // Every session is checked before any is covered: a refusal costs no covering.
            for session in sessions {
                do { try RangeExtractor.checkFaces(source: session, settings: settings) } catch {
                    say("Error: \(session): \(error)")
                    throw "\(error)".hasPrefix("--blur-faces") ? ExitCode(64) : SyncServiceExit.unreadableSession
                }
            }
            uploaded = []
            for session in sessions {
                let parent = URL(fileURLWithPath: session).deletingLastPathComponent().path
                Self.removeAbandonedCopies(in: parent)
                let directory = "\(parent)/\(Self.copyPrefix)\(getpid())-\(UUID().uuidString)"
                scratch.append(directory)
                say("covering the faces in \(session)")
                do {
                    let outcome = try RangeExtractor.extract(
                        .whole(
                            source: session, out: "\(directory)/\(URL(fileURLWithPath: session).lastPathComponent)",
                            faces: settings),
                        say: { say("  \($0)") })
                    guard outcome.report.isValid else {
                        let problem = outcome.report.problems.first.map { "\($0)" } ?? ""
                        say("Error: the covered copy of \(session) did not validate: \(problem)")
                        throw SyncServiceExit.unreadableSession
                    }
                    uploaded.append(outcome.out)
                } catch let exit as ExitCode {
                    throw exit
                } catch let failure as RangeExtractor.Failure {
                    say("Error: \(session): \(failure.message)")
                    // A camera that cannot be covered, or no detector: a request that cannot be done.
                    throw failure.message.hasPrefix("--blur-faces") ? ExitCode(64) : SyncServiceExit.unreadableSession
                } catch {
                    say("Error: \(session): covering its faces: \(error)")
                    throw SyncServiceExit.unreadableSession
                }
            }
        }
        let request = try SyncServiceArguments.request(sessions: uploaded, primary: primary)
        let form: MultipartForm
        do {
            form = try request.uploadForm()
        } catch let error as SyncRequestError {
            throw SyncServiceExit.fail(error)
        } catch {
            say("Error: \(error)")
            throw SyncServiceExit.unreadableSession
        }
        let files = request.sessions.reduce(0) { $0 + $1.streams.filter { $0.dataFile != nil }.count * 2 }
        say("uploading \(files) files (\(Self.megabytes(form.length))) to \(to)")

        let sent = FormBody.Progress()
        let progress = ProgressLine(total: form.length, sent: sent)
        progress.start()
        let outcome = Result { try waitForAsync { try await uploader.upload(form, sent: sent) } }
        if case .success = outcome { progress.stop(summary: true) } else { progress.stop(summary: false) }
        switch outcome {
        case .failure(let error):
            say("Error: \(error)")
            throw SyncServiceExit.unreachable
        case .success(let answer):
            if (200..<300).contains(answer.status) {
                print(answer.body)
                return
            }
            say(
                "Error: the SyncField service answered \(answer.status) "
                    + "\(answer.reason): \(SyncUploader.message(in: answer))"
            )
            throw SyncServiceExit.serviceError
        }
    }

    /// The covered copies `--blur-faces` writes beside a session: `.upload-faces-PID-UUID`.
    static let copyPrefix = ".upload-faces-"

    /// Removes the covered copies an upload left beside its sessions when it was killed (its
    /// process is gone): they are hidden from `fieldcap sessions` and the storage budget.
    static func removeAbandonedCopies(in directory: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names where name.hasPrefix(copyPrefix) {
            guard let pid = Int32(name.dropFirst(copyPrefix.count).prefix { $0 != "-" }), pid > 0,
                kill(pid, 0) != 0 && errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
        }
    }

    static func megabytes(_ bytes: Int64) -> String {
        cFormat("%.1f MB", Double(bytes) / 1e6)
    }
}

/// The upload's progress on standard error: rewritten in place on a terminal, a line every
/// ten seconds otherwise (a log or a pipe).
final class ProgressLine: Sendable {
    let total: Int64
    let sent: FormBody.Progress
    let stopping = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    let startNs = DispatchTime.now().uptimeNanoseconds

    init(total: Int64, sent: FormBody.Progress) {
        self.total = total
        self.sent = sent
    }

    func start() {
        let terminal = isatty(2) == 1
        detachThread(named: "fc-progress") { [self] in
            while stopping.wait(timeout: .now() + (terminal ? 0.25 : 10)) == .timedOut {
                writeStandardError((terminal ? "\r" : "") + line() + (terminal ? "\u{1B}[K" : "\n"))
            }
            if terminal { writeStandardError("\r\u{1B}[K") }
            finished.signal()
        }
    }

    /// Ends the line; `summary`: say how it went (not when nothing went through).
    func stop(summary: Bool) {
        stopping.signal()
        finished.wait()
        if summary { say(line()) }
    }

    func line() -> String {
        let done = sent.value
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - startNs) / 1e9
        let percent = total > 0 ? Double(done) * 100 / Double(total) : 100
        let rate = seconds > 0 ? Double(done) / seconds / 1e6 : 0
        return "sent \(Upload.megabytes(done)) of \(Upload.megabytes(total)) "
            + cFormat("(%.0f%%), %.1f MB/s", percent, rate)
    }
}
