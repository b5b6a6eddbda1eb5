import ArgumentParser
import FieldcapSyncService

/// Exit statuses of `request` and `upload`, as their help documents them.
enum SyncServiceExit {
    /// A session cannot be read (no manifest, a missing file).
    static let unreadableSession = ExitCode(66)
    /// The service could not be reached, or the connection was lost.
    static let unreachable = ExitCode(69)
    /// The service answered with an error status.
    static let serviceError = ExitCode(1)

    static func fail(_ error: SyncRequestError) -> ExitCode {
        say("Error: \(error)")
        switch error {
        case .unreadableSession, .segmentedRecording, .noCaptureSessions: return unreadableSession
        default: return ExitCode(64)
        }
    }
}

struct Request: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Print the SyncField service's request body (POST /api/v1/sync) for sessions.",
        discussion: """
            Builds the volume-mounted request of the SyncField alignment service from the \
            sessions' manifest.json files, as the SDK README does: one entry in `hosts` per \
            session (each from its own host), every stream with its `stream_id`, videos with \
            their `path`, sensor streams with `"stream_type": "sensor"`, exactly one \
            `"is_primary": true` (the first video, in the order the streams were given to the \
            recorder, unless --primary names another), and `timestamps_dir`.

            Several sessions from several rigs make one multi-host body. Paths are the files' \
            own paths on this machine, or under --data-dir where the service mounts them: \
            DIR/FILE for one session, DIR/SESSION/FILE for several (their files share names).

              fieldcap request sessions/rig-20261123T140200Z \\
                  --data-dir /data --timestamps-dir /timestamps > body.json
              curl -X POST -H 'Content-Type: application/json' -d @body.json \\
                  http://localhost:8080/api/v1/sync

            After a capture across rigs (`--capture-id`, a fleet's start), --capture-id ID takes \
            the sessions of that capture from the places given (sessions, or directories of \
            them, such as each rig's sessions root copied here):

              fieldcap request --capture-id lab-0412 rig1/ rig2/ rig3/ --data-dir /data

            A segmented recording is not a session: name one of its segments, or cut a range \
            with `fieldcap extract`. `fieldcap upload` sends the files themselves instead.

            Exit status: 0 with the body printed; 64 for a usage error (two sessions from one \
            host, no video, an unknown --primary); 66 when a session cannot be read (no \
            manifest, a missing file, a segmented recording, no session of --capture-id).
            """)

    @Argument(
        help:
            """
            Finished SyncField sessions (fieldcap's or the SDK's), one per \
            host; with --capture-id, also directories that hold sessions.
            """,
        completion: .directory)
    var sessions: [String]

    @Option(
        help: ArgumentHelp(
            "Take the sessions of this capture (capture_id in their fieldcap.json: "
                + "a fleet's start, or `record --capture-id`) from the places given.",
            valueName: "ID"))
    var captureId: String?

    @Option(
        help: ArgumentHelp(
            "The primary video's stream id (HOST/ID where several hosts have it); default: the first video.",
            valueName: "STREAM"))
    var primary: String?

    @Option(
        name: .customLong("data-dir"),
        help: ArgumentHelp("Where the service sees the sessions' files (its volume mount).", valueName: "DIR"))
    var dataDir: String?

    @Option(
        name: .customLong("timestamps-dir"),
        help: ArgumentHelp("The body's timestamps_dir, where the service sees the timestamps files.", valueName: "DIR"))
    var timestampsDir = "/timestamps"

    func run() throws {
        var sessions = self.sessions
        if let captureId {
            do {
                sessions = try CaptureSessions.find(captureId: captureId, in: sessions)
            } catch {
                throw SyncServiceExit.fail(error)
            }
        }
        let request = try SyncServiceArguments.request(sessions: sessions, primary: primary)
        for id in request.sharedStreamIds {
            say(
                "warning: stream id \(id) is on more than one host; the service "
                    + "finds timestamps files by stream id in one timestamps_dir"
            )
        }
        print(request.body(dataDirectory: dataDir, timestampsDirectory: timestampsDir).json())
    }
}

enum SyncServiceArguments {
    /// The request for `sessions`; a camera that recorded nothing in one of them is left out, said.
    static func request(sessions: [String], primary: String?) throws -> SyncRequest {
        do {
            let request = try SyncRequest(
                sessions: sessions.map { path throws(SyncRequestError) in try SessionSource(directory: path) },
                primary: primary)
            for session in request.sessions {
                for id in session.absentStreams {
                    say(
                        "note: \(session.directory): stream \(id) recorded nothing there "
                            + "(its device was away); left out")
                }
            }
            return request
        } catch {
            throw SyncServiceExit.fail(error)
        }
    }
}
