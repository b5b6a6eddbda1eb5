import ArgumentParser
import FieldcapSession
import FoundationEssentials
import Logging
import SyncField

@main
struct Fieldcap: ParsableCommand {
    static let version = Sidecar.fieldcapVersion

    // Every command spells its name: ArgumentParser otherwise derives it from the type's name
    // (String(describing:), which demangles it), again each time it builds the command tree:
    // about a tenth of a short recording's CPU.
    static let configuration = CommandConfiguration(
        commandName: "fieldcap",
        abstract: "Record cameras and IMUs on Linux into SyncField 0.1 sessions, with timestamps you can trust.",
        discussion: """
            fieldcap writes sessions in the SyncField 0.1 format, byte-compatible with the SyncField \
            Swift SDK, so the SyncField alignment service reads them as they are.

            Record two synthetic cameras and an IMU for 10 seconds, then check the session:
              fieldcap --cam synthetic:1280x720@30 --cam synthetic:1280x720@30 --imu synthetic:1000 --duration 10s
              fieldcap validate sessions/<host>-<UTC time>
            """,
        version: version,
        subcommands: [
            Record.self, Serve.self, Check.self, Validate.self, Recover.self, Sessions.self, Extract.self, Export.self,
            CheckSync.self,
            Request.self,
            Upload.self, Fleet.self, List.self, Feed.self, MarkCommand.self,
            Bench.self, InstallUdev.self,
        ],
        defaultSubcommand: Record.self
    )

    static func main() {
        // The one place logging is set up; the library modules only accept loggers.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel =
                ProcessInfo.processInfo.environment["FIELDCAP_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
            return handler
        }
        main(nil)
    }
}
