import ArgumentParser
import FieldcapCore
import FieldcapSystem
import FoundationEssentials
import Glibc

/// `fieldcap install-udev`: the group and udev rules that let a rig record without root.
struct InstallUdev: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install-udev",
        abstract: "Install the udev rules that let the fieldcap group record cameras and IMUs without root.",
        discussion: """
            As root: makes the system group (groupadd --system), writes the rules to
            /etc/udev/rules.d/70-fieldcap.rules and applies them to the devices already
            present (udevadm control --reload; udevadm trigger --action=add; udevadm
            settle). Then add the users who record: usermod -aG fieldcap USER (they log in
            again).

            The rules give the group the camera nodes (/dev/videoN) and IIO nodes
            (/dev/iio:deviceN), the IIO sysfs files buffered capture writes (buffer
            enable, length and watermark, scan element enables, current trigger, sampling
            frequency, timestamp clock) and the configfs folder hrtimer triggers are made
            in; they set each IIO device's timestamp clock to monotonic_raw and name it
            /dev/iio/by-name/NAME.

            --print shows the rules without installing anything.
            """
    )

    @Flag(help: "Print the rules on stdout; install nothing.")
    var print = false

    @Option(help: ArgumentHelp("Where the rules file goes.", valueName: "DIR"))
    var rulesDir = "/etc/udev/rules.d"

    static let group = "fieldcap"
    static let fileName = "70-fieldcap.rules"
    static var rules: [UInt8] { PackageResources.udev_rules }

    func run() throws {
        if print {
            writeStandardOutput(Self.rules)
            return
        }
        guard geteuid() == 0 else {
            fail(
                "install-udev changes system files: run it as root (sudo fieldcap "
                    + "install-udev), or --print the rules to install them yourself"
            )
        }
        if getgrnam(Self.group) == nil {
            try step("groupadd", ["--system", Self.group], required: true)
            Swift.print("made the system group \(Self.group)")
        }
        let path = "\(rulesDir)/\(Self.fileName)"
        do {
            try FileManager.default.createDirectory(atPath: rulesDir, withIntermediateDirectories: true)
            try Data(Self.rules).write(to: URL(fileURLWithPath: path), options: .atomic)
            chmod(path, 0o644)
        } catch {
            fail("cannot write \(path): \(errorText(error))")
        }
        Swift.print("installed \(path)")
        do {
            try step("udevadm", ["control", "--reload"], required: false)
            try step(
                "udevadm",
                [
                    "trigger", "--action=add", "--subsystem-match=video4linux", "--subsystem-match=iio",
                    "--subsystem-match=gpio",
                ],
                required: false)
            try step("udevadm", ["settle", "--timeout=10"], required: false)
            Swift.print("applied to the cameras and IMUs present; add users with: usermod -aG \(Self.group) USER")
        } catch {
            Swift.print(
                "udevd is not running here: the rules apply from the next "
                    + "boot (or start udevd and run: udevadm trigger --action=add)"
            )
        }
    }

    private func fail(_ message: String) -> Never {
        say("Error: \(message)")
        Glibc.exit(1)
    }

    /// Runs a system tool from the usual places. `required` failures end the command.
    private func step(_ tool: String, _ arguments: [String], required: Bool) throws {
        let candidates = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map { "\($0)/\(tool)" }
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            if required { fail("\(tool) not found; make the group '\(Self.group)' by hand, then run this again") }
            throw CocoaError(.fileNoSuchFile)
        }
        // posix_spawn rather than Foundation's Process: a tool run and waited for needs no run loop.
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        fflush(nil)  // our lines before the tool's
        var pid: pid_t = 0
        var status: Int32 = 0
        let spawned = posix_spawn(&pid, path, nil, nil, argv, environ)
        if spawned == 0 {
            _ = SystemCall.retryingInterrupts { waitpid(pid, &status, 0) }
        }
        let exitStatus = spawned != 0 ? 127 : (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard exitStatus == 0 else {
            if required { fail("\(tool) \(arguments.joined(separator: " ")) failed (exit \(exitStatus))") }
            throw CocoaError(.executableLoad)
        }
    }
}
