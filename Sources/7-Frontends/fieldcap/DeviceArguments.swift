import ArgumentParser
import FieldcapCore
import FieldcapSession
import Logging

/// The `--cam`, `--imu` and `--sensor` options, shared by `fieldcap record` and `fieldcap bench jitter`.
struct DeviceArguments: ParsableArguments {
    @Option(name: .customLong("cam"), help: ArgumentHelp("A camera (repeatable).", valueName: "SPEC"))
    var cameras: [String] = []

    @Option(name: .customLong("imu"), help: ArgumentHelp("An IMU (repeatable).", valueName: "SPEC"))
    var imus: [String] = []

    @Option(
        name: .customLong("sensor"),
        help: ArgumentHelp(
            "Another sensor (repeatable): feed:NAME (a local program feeds it) or gpsd.", valueName: "SPEC"))
    var sensors: [String] = []

    var specs: [DeviceSpec] {
        get throws {
            do throws(PlanError) {
                return try cameras.map { argument throws(PlanError) in try DeviceSpec(kind: .camera, argument: argument)
                }
                    + imus.map { argument throws(PlanError) in try DeviceSpec(kind: .imu, argument: argument) }
                    + sensors.map { argument throws(PlanError) in try DeviceSpec(kind: .sensor, argument: argument) }
            } catch {
                throw error.exitForCommand()
            }
        }
    }

    var isEmpty: Bool { cameras.isEmpty && imus.isEmpty && sensors.isEmpty }
}

extension DevicePlan {
    /// `validate`, for a command's `validate()`: a problem is one line and exit status 64.
    func validateForCommand(verb: String) throws {
        do throws(PlanError) { try validate(verb: verb) } catch { throw error.exitForCommand() }
    }

    /// Opens and sets up every device. A device that cannot be used as asked is one line on
    /// stderr and exit status 64 (a usage error), without the usage text.
    func makeSourcesForCommand(logger: Logger = .silent(label: "fieldcap")) throws -> [CaptureSource] {
        do {
            return try makeSources(logger: logger)
        } catch let error as PlanError {
            throw error.exitForCommand()
        } catch let error as DeviceSetupError {
            say("Error: \(error.message)")
            throw ExitCode(64)
        }
    }
}

extension RigConfig {
    /// `load` for a command: a config error is one line on stderr and exit status 64.
    static func loadForCommand(path: String) throws -> RigConfig {
        do {
            return try load(path: path)
        } catch {
            sayValidationError(error.message)
            throw ExitCode(64)
        }
    }
}
