import ArgumentParser
import SyncField

@main
struct Fieldcap: ParsableCommand {
    static let version = "0.1.0-dev"

    static let configuration = CommandConfiguration(
        commandName: "fieldcap",
        abstract: "Record cameras and IMUs on Linux into SyncField 0.1 sessions, with timestamps you can trust.",
        discussion: """
            fieldcap writes sessions in the SyncField 0.1 format, byte-compatible with the SyncField \
            Swift SDK, so the SyncField alignment service reads them as they are.

            Check a session directory:
              fieldcap validate /data/sessions/rig_01-20261121T224500Z
            """,
        version: version,
        subcommands: [Validate.self]
    )
}
