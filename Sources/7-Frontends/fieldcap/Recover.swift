import ArgumentParser
import FieldcapCore
import FieldcapMedia
import FieldcapSession
import FoundationEssentials
import SyncField

struct Recover: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recover",
        abstract: "Finish a session the recorder could not (SIGKILL, a crash, a power cut).",
        discussion: """
            fieldcap writes fieldcap.json with the host id, the sync point and the streams
            as a recording starts, and makes every file durable at least once a second.
            recover uses that to finish the session:

              - lines that did not reach the disk whole, or read back damaged, are cut
                from the end of every .jsonl and .ndjson file;
              - each video keeps exactly the frames that have a timestamp line: lines a
                power cut took are written back from the camera's frame log
                ({id}.frames.ndjson holds the values the recorder stamped), each only
                where it gives the frame's time in the video; a frame with no such line,
                or cut short by the end of the file, is cut;
              - each video is made a finished file in place (its size and duration
                written; no copy, however long it is), so it plays to its last frame;
              - an IMU's timestamp and sensor lines are cut to the samples both files
                have;
              - sync_point.json and manifest.json are written as the recorder would have,
                and fieldcap.json says what was recovered.

            For a recording made with --segment, give the recording's directory: the
            segment being written when the recorder died is finished as above, the one
            made ready ahead and never written into is removed, recording.json is brought
            up to date, and the finished segments are left alone.

            Then it validates the session. A session that is already complete and valid,
            or a directory fieldcap did not record, is left untouched. Exit status: 0 when
            the session is valid (recovered or already), 1 when it still has problems or
            when a video cannot be recovered without losing what it holds (a damaged
            header, damage in the middle: the session is then left as it was, nothing cut
            or deleted), 65 for a directory that is not a fieldcap session, 75 for a
            session or recording a fieldcap is recording right now (nothing is changed;
            recover it once that recorder has stopped), 64 for a usage error.
            """)

    @Argument(help: "The session directory.", completion: .directory)
    var directory: String

    func validate() throws {
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) else {
            throw ValidationError("\(directory) does not exist; give a session directory")
        }
        guard isDirectory else { throw ValidationError("\(directory) is a file; give a session directory") }
    }

    func run() throws {
        do { try recover() } catch let live as RecordingLock.Failure {
            say("Error: \(live.message)")
            throw ExitCode(75)
        } catch let refusal as CameraRecovery.Refusal {
            say("Error: \(refusal)")
            throw ExitCode(1)
        } catch let refusal as RecordingRecovery.Refusal {
            say("Error: \(refusal)")
            throw ExitCode(1)
        }
    }

    private func recover() throws {
        if let outcome = try RecordingRecovery.recover(directory: directory, say: { print($0) }) {
            switch outcome {
            case .alreadyComplete(let state):
                print("\(directory): the recording is \(state) and every segment finished; nothing to recover")
            case .recovered(let segments, _, let report):
                for problem in report.problems { print("\(directory)/\(problem)") }
                guard report.isValid else {
                    print(
                        "\(directory): recovered \(segments.count) segment\(segments.count == 1 ? "" : "s"), "
                            + "but \(report.problems.count) problem\(report.problems.count == 1 ? "" : "s") remain"
                    )
                    throw ExitCode(1)
                }
                print(
                    "\(directory): recovered \(segments.count) segment\(segments.count == 1 ? "" : "s"); "
                        + "valid recording, \(report.segmentsValid) segments, \(report.lineCount) timestamp lines"
                )
            }
            return
        }
        switch try SessionFinisher.recover(directory: directory, say: { print($0) }) {
        case .notAFieldcapSession:
            say(
                "Error: \(directory) is not a fieldcap session (no readable "
                    + "fieldcap.json with its streams and sync point): nothing changed"
            )
            throw ExitCode(65)
        case .alreadyValid(let state):
            print("\(directory): the session is \(state) and valid; nothing to recover")
        case .recovered(let report):
            for problem in report.problems { print("\(directory)/\(problem)") }
            if report.isValid {
                print(
                    "\(directory): recovered; valid SyncField 0.1 session, "
                        + "\(report.streamCount) streams, \(report.lineCount) timestamp lines"
                )
            } else {
                print(
                    "\(directory): recovered, but \(report.problems.count) "
                        + "problem\(report.problems.count == 1 ? "" : "s") remain"
                )
                throw ExitCode(1)
            }
        }
    }
}
