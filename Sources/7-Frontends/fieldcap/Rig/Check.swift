import ArgumentParser
import FieldcapCore
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import SyncField

/// `fieldcap check`: is the rig ready to record what its config asks, without recording.
struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that a rig's devices and storage can record what its config asks, without recording.",
        discussion: """
            Every device is opened and set up exactly as a recording would (format, size,
            frame rate, controls; IIO channels, trigger, rate, timestamp clock), what it
            granted is shown, and everything is put back. An intrinsics file is read and
            matched to the sizes the cameras granted. The output root must be writable
            with more free space than min_free. Exit status 0 when the rig is ready, 1
            when something is not (each problem on its own line, naming the config line),
            64 for a config error.

            A rig config (YAML). Values are checked like the --cam/--imu options of the
            same name (`fieldcap record --help`); only device is required:

              host_id: rig07             # clock_domain of every line (hostname)
              output: /var/lib/fieldcap/sessions  # a new directory for each recording
              min_free: 2G               # stop cleanly below this free space (256M)
              sync_every: 1s             # fdatasync at least this often (1s)
              duration: 30m              # stop after this long (default: until stopped)
              segment: 30s               # segments this long (default: one session)
              max_storage: 16G           # with segment: keep the newest within this
              keep: 2h                   # with segment: delete segments older than this
              mark_before: 30s           # fieldcap mark: keep this before a mark (30s)
              mark_after: 30s            # and this after it (30s)
              mark_gpio: gpiochip0:17,label=button  # a line whose edges mark
              intrinsics: camchain.yaml  # cameras' calibration (Kalibr, OpenCV, ROS) by
                                         # id; camchain.yaml,match=order by order
              preview_blur_faces: true   # serve: faces covered in the live previews
              upload_blur_faces: true    # serve --server: and in what is uploaded
              cameras:
                - device: /dev/v4l/by-id/usb-046d_C920_A1B2C3D4-video-index0
                  id: cam_left
                  size: 1280x720
                  fps: 30
                  format: YUYV           # YUYV, MJPG, NV12, GREY, Y16, Z16
                  buffers: 8
                  stall: 2s
                  controls:              # V4L2 controls by name (`fieldcap list`)
                    exposure_auto: 1
              imus:
                - device: bmi160         # iio:deviceN or the device's name
                  id: imu
                  rate: 1000
                  channels: [accel, anglvel]  # kinds or kernel channel ids
                  clock: raw             # raw (default) or keep

            Examples:
              fieldcap check --config /etc/fieldcap/rig.yaml
              fieldcap --config /etc/fieldcap/rig.yaml          # record it
            """
    )

    @Option(help: ArgumentHelp("The rig config to check.", valueName: "FILE"))
    var config: String

    func run() throws {
        let rig = try RigConfig.loadForCommand(path: config)
        let plan = DevicePlan(specs: rig.devices)
        do throws(PlanError) {
            try plan.validate(verb: "check")
        } catch {
            say("Error: \(error.message)")
            throw ExitCode(64)
        }
        var problems = 0
        print(
            "\(config): \(rig.devices.count) device(s), host id "
                + "\(rig.hostId ?? RecordingSettings.defaultHostId() + " (hostname)")"
        )
        var opened: [CaptureSource] = []
        for (spec, id) in zip(plan.specs, plan.streamIds) {
            do {
                let source = try plan.makeSource(spec, id: id)
                opened.append(source)
                print("ok    \(id)  \(spec.device): \(Self.granted(source))")
            } catch {
                problems += 1
                let message = (error as? DeviceSetupError)?.message ?? (error as? PlanError)?.message ?? "\(error)"
                print("FAIL  \(id)  \(message)")
            }
        }
        // As a recording would: read the intrinsics file, then match it to the granted sizes.
        do throws(PlanError) {
            if let setting = try rig.intrinsicsSetting() {
                let cameras = try setting.assign(to: opened).cameras.keys.sorted().joined(separator: ", ")
                print(
                    "ok    intrinsics  \(setting.file.path) (\(setting.file.kind.rawValue)): "
                        + "\(cameras.isEmpty ? "no camera" : cameras) matched by \(setting.match.rawValue)"
                )
            }
        } catch {
            problems += 1
            print("FAIL  intrinsics  \(error.message)")
        }
        if let storage = storageProblem(
            root: rig.output ?? RecordingSettings.defaultRoot,
            minFree: rig.minFree ?? RecordingController.defaultMinFree)
        {
            problems += 1
            print("FAIL  storage  \(storage)")
        }
        if problems > 0 {
            say("Error: \(problems) problem(s): the rig cannot record this config yet")
            throw ExitCode(1)
        }
        print("ready: `fieldcap --config \(config)` records this rig")
    }

    /// What a set-up device granted, in one line.
    static func granted(_ source: CaptureSource) -> String { source.report.summary }

    /// Why sessions could not be written under `root`, or nil.
    func storageProblem(root: String, minFree: ByteSize) -> String? {
        // The nearest directory that exists: the root itself, or where it would be created.
        var existing = root
        while !FileManager.default.fileExists(atPath: existing) {
            let parent = PathName.directory(of: existing)
            if parent == existing || parent.isEmpty { existing = "."; break }
            existing = parent
        }
        guard access(existing, W_OK | X_OK) == 0 else {
            return "output \(root): \(existing) is not writable by this user; choose another output or fix its owner"
        }
        if let free = freeBytes(at: existing), free < minFree.bytes {
            return
                "output \(root): only \(ByteSize(bytes: free)) free, below "
                + "min_free \(minFree); free some space or lower min_free"
        }
        print(
            "ok    storage  \(root): "
                + "\(freeBytes(at: existing).map { "\(ByteSize(bytes: $0)) free" } ?? "writable"), min_free \(minFree)"
        )
        return nil
    }
}
