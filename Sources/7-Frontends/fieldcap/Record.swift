import ArgumentParser
import FieldcapClockQuality
import FieldcapCore
import FieldcapRig
import FieldcapSegments
import FieldcapSession
import FieldcapSystem
import FoundationEssentials
import Glibc
import Logging
import SyncField

struct Record: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record cameras, IMUs and fed sensors into a new SyncField session directory (the default command).",
        discussion: """
            Each --cam and --imu takes a device and options, separated by commas:

              --cam synthetic:1280x720@30,id=cam_left  synthetic camera (moving pattern)
              --imu synthetic:1000,id=imu               synthetic IMU (accel + gyro)
              --cam /dev/video0,size=1280x720,fps=30   V4L2 camera (`fieldcap list`)
              --imu iio:device0,rate=1000               IIO IMU, by id or name

            Camera options: id, size=WxH, fps, format (YUYV, MJPG, NV12, GREY, Y16, Z16,
            or the 8-bit Bayer mosaics BA81, GBRG, GRBG, RGGB), buffers, and
            ctrl.NAME=VALUE for V4L2 controls (exposure, gain, focus...: `fieldcap list`).
            encode=raw|jpeg[:QUALITY]|ffv1|h264[:BITRATE]|hevc[:BITRATE]: raw (the
            default) stores frames losslessly as captured; jpeg stores YUYV, NV12, GREY
            and Bayer (demosaiced) frames as JPEG (libjpeg-turbo, quality 85 unless
            given), at a tenth of the bytes; ffv1 stores YUYV, NV12, GREY, Bayer, Y16 and
            Z16 frames as lossless FFV1 (FFmpeg's libavcodec; decoded, the camera's bytes
            exactly), at about a third to a half, for far more CPU. h264 and hevc use the
            machine's V4L2 hardware encoder (`fieldcap list`; encoder=/dev/videoN names
            one), the bit rate in bits/s (4M, 800k) or the driver's default; fwht is
            vicodec's, the kernel's test codec. Each encoded camera has an encoding thread
            (threads=N: N of them, for jpeg and ffv1); one that falls behind drops frames
            (reason `encoder` in fieldcap.json); capture never waits. stall=DURATION (V4L2
            and IIO): a device that delivers nothing for that long ends its stream
            (default 2s; the other streams go on). rejoin=N (V4L2 and IIO): a device
            unplugged mid-recording is waited for (the same one: a camera's serial in any
            port, or its USB port without one; an IMU's parent device and name) and taken up again as it was (format,
            or channels, rate and trigger), up to N times a minute (default 10; 0: its
            stream ends); the time away is in fieldcap.json (away). stamp=exposure-start
            (UVC cameras): capture_ns is the camera's own start of exposure, its PTS read
            from the metadata node beside the video and mapped through its clock
            references (the kernel's time until the model has two seconds, and for frames
            without one); stamp=exposure-middle adds half the exposure time the camera
            keeps (exposure_time_absolute; ctrl.auto_exposure=1 for manual exposure);
            stamp=dequeue: the moment fieldcap took the frame; stamp=kernel, the default,
            the kernel's time, mapped. The frame log keeps the others (device_ns,
            dequeue_ns; UVC cameras: exposure_start_ns). IMU options: id, rate
            (Hz), and for IIO devices channels=A+B (kernel channel ids like accel_x, or
            kinds: accel, anglvel, magn, temp; default: all four kinds), trigger=NAME
            (default: the attached one, else a new hrtimer trigger), clock=raw|keep (raw,
            the default, sets the device's timestamp clock to monotonic_raw; keep maps
            its clock). Stream ids default to cam0, cam1, ... and imu0, imu1, ...
            Synthetic sources with motion=hand: the camera (GREY or YUYV) sees a textured
            wall turned by hand, its stamps late by delay=MS (7.5ms, -20ms), through a
            lens fov=DEGREES across (60 by default), the IMU's gyroscope reads the same
            turning, its stamps late by its own delay=MS (motion=still: a rig held
            still); the known truth `fieldcap check-sync` is tested with. A synthetic
            camera with picture=FILE.png (YUYV, NV12, GREY or Bayer) shows that photograph
            moving across its pattern, as a person walks past (`export --blur-faces`).

            --sensor feed:NAME[,socket=PATH][,rate=HZ][,channels=A+B]: any other sensor,
            fed by a local program: a Unix socket (/run/fieldcap/feeds/NAME.sock as root,
            $XDG_RUNTIME_DIR/fieldcap/feeds/ otherwise) that takes one JSON record per
            line, {"capture_ns": N, "channels": {...}}, written as the SDK's record()
            writes it (`fieldcap feed --help`; docs/feeds.md). Bad lines are counted and
            shown, never fatal; channels= pins the channels every record must carry.
            --sensor gpsd[:HOST:PORT][,pps]: a GNSS receiver through gpsd (stream gnss):
            each fix's position, velocity, errors and GNSS time; pps adds the offset
            between GNSS time and this host's clock (gpsd's PPS or TOFF) to fieldcap.json.

            The session goes into a new directory, --out DIR, or ROOT/HOST-UTCTIME under
            --root (./sessions by default). fieldcap never writes into an existing
            directory. Each camera is recorded to {id}.mkv (Matroska), every stream to
            {id}.timestamps.jsonl, each IMU to {id}.jsonl, with manifest.json and
            sync_point.json (SyncField 0.1) and fieldcap.json (devices, formats, drops,
            why it stopped).

            With --segment 30s, fieldcap records without end in consecutive segments: a
            recording directory holds recording.json (the index: every segment's start and
            end in UTC and CLOCK_MONOTONIC_RAW, counts, sizes, states) and one complete
            session per segment (00000001-20261123T140200Z, ...). Capture never stops at a
            boundary: each frame and sample goes into the segment its capture_ns falls in.
            --max-storage 16G and/or --keep 2h delete the oldest finished segments to stay
            within a budget (never the one being written, never a directory holding files
            fieldcap did not write).

            Stop with Ctrl-C (SIGINT), SIGTERM, or --duration. Recording also stops,
            cleanly, when the disk's free space falls below --min-free (256M by default),
            or when the disk fills up anyway: the session is finished and valid up to the
            last second. After a crash or power cut, `fieldcap recover DIR` finishes the
            session.

            Exit status: 0 when every stream recorded to the end, 3 when a stream ended
            early (the session is still valid), 4 when the disk was full or below
            --min-free (the session is still valid), 1 on another failure, 64 for a usage
            error.
            """
    )

    @OptionGroup var devices: DeviceArguments

    @Option(
        help: ArgumentHelp(
            "Record the rig a YAML file describes (host id, output root, devices, storage limits); "
                + "options given here win over the file's. `fieldcap check --help` shows the format.",
            valueName: "FILE"))
    var config: String?

    @Option(help: ArgumentHelp("The session directory to create (must not exist).", valueName: "DIR"))
    var out: String?

    @Option(
        help: ArgumentHelp(
            "Where a session directory is made when --out is not given (default: $FIELDCAP_ROOT, else ./sessions).",
            valueName: "DIR"))
    var root: String?

    @Option(help: ArgumentHelp("The host id: clock_domain of every line (default: the hostname).", valueName: "ID"))
    var hostId: String?

    @Option(help: ArgumentHelp("Stop after this long: 10s, 500ms, 2m, 1h.", valueName: "DURATION"))
    var duration: Duration?

    @Option(
        help: ArgumentHelp(
            "Make everything durable (fdatasync) at least this often; a crash loses at most this much (default 1s).",
            valueName: "DURATION"))
    var syncEvery: Duration?

    @Option(
        help: ArgumentHelp(
            "Stop cleanly when the disk's free space falls below this: 256M (the default), 1G, 0 to fill it.",
            valueName: "SIZE"))
    var minFree: ByteSize?

    @Option(
        help: ArgumentHelp(
            "Record in consecutive segments this long (30s, 5m, 1h), each a complete session, in one "
                + "recording directory with an index (recording.json); capture goes on across every boundary.",
            valueName: "DURATION"))
    var segment: Duration?

    @Option(
        help: ArgumentHelp(
            "With --segment: delete the oldest finished segments so the recording stays within this size (500M, 16G).",
            valueName: "SIZE"))
    var maxStorage: ByteSize?

    @Option(
        help: ArgumentHelp(
            "With --segment: delete finished segments that ended longer ago than this (30m, 2h, 7d).",
            valueName: "DURATION"))
    var keep: Duration?

    @Option(
        help: ArgumentHelp(
            "The cameras' calibration: a Kalibr camchain, or an OpenCV or ROS calibration YAML, matched to "
                + "the cameras by id (the file's cam0 is the stream cam0) or with ,match=order by --cam order. "
                + "Checked against the granted sizes before recording; the file is copied into the session as "
                + "calibration.yaml and its values go into fieldcap.json, where `fieldcap export` finds them.",
            valueName: "FILE[,match=order]"))
    var intrinsics: String?

    @Option(help: wallClockHelp)
    var wallClock: ClockQualityReader.Source = .auto

    @Option(
        help: ArgumentHelp(
            "The capture across rigs this recording belongs to, written into fieldcap.json as capture_id (the "
                + "rules of a host id); `fieldcap request --capture-id` gathers the rigs' sessions of one capture.",
            valueName: "ID"))
    var captureId: String?

    @Flag(
        help:
            """
            Write the videos through the page cache even where the disk's filesystem does direct I/O (ext4, XFS, \
            f2fs on Linux 6.1 or later), which is the default: direct I/O saves most of the CPU raw video costs, \
            but each frame waits for the disk, so a slow card has only the camera's buffers to ride out a stall.
            """
    )
    var noDirectIO = false

    @OptionGroup var markGPIO: MarkGPIOOption

    @Flag(name: .shortAndLong, help: "No status line and no summary; errors only.")
    var quiet = false

    @Flag(help: "Print progress as one JSON object per line on stdout, for rigs and scripts.")
    var json = false

    /// What this recording uses: the command line over the config file over the defaults.
    func settings() throws -> RecordingSettings {
        var rig: RigConfig?
        if let config {
            if !devices.isEmpty {
                throw ValidationError(
                    "--config \(config) describes the devices; give either --config or --cam/--imu, not both")
            }
            rig = try RigConfig.loadForCommand(path: config)
        }
        var overrides = RecordingSettings.Overrides(
            hostId: hostId, root: root, duration: duration, syncEvery: syncEvery, minFree: minFree, segment: segment,
            maxStorage: maxStorage, keep: keep)
        overrides.intrinsics = intrinsics
        overrides.wallClock = wallClock
        overrides.captureId = captureId
        overrides.markGPIO = markGPIO.lines
        let specs = rig == nil ? try devices.specs : []
        do throws(PlanError) {
            return try RecordingSettings.resolve(config: rig, devices: specs, overrides: overrides)
        } catch {
            throw error.exitForCommand()
        }
    }

    func validate() throws {
        if quiet && json {
            throw ValidationError(
                "--quiet and --json contradict each other: --json prints progress "
                    + "on stdout, --quiet prints nothing but errors; choose one"
            )
        }
        _ = try settings()
        if let out, FileManager.default.fileExists(atPath: out) {
            throw ValidationError(
                "--out \(out) already exists; fieldcap never writes into an existing directory: choose a new path")
        }
    }

    func run() throws {
        let logger = Logger(label: "fieldcap")
        let settings = try settings()
        let sources = try settings.plan.makeSourcesForCommand(logger: logger)
        let controllerSettings: RecordingController.Settings
        do throws(PlanError) {
            controllerSettings = try settings.controllerSettings(for: sources, out: out, directIO: !noDirectIO)
        } catch {
            throw error.exitForCommand()
        }
        let recording = RecordingController(
            sources: sources, settings: controllerSettings,
            logger: .lines(label: "fieldcap.record") { [quiet] message in
                if !quiet { say("\r\u{1B}[K\(message)") }
            })
        // Signals are blocked before any thread starts (threads inherit the mask) and taken in
        // one place, below; a second Ctrl-C while stopping changes nothing.
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        // The recording runs on the rig's runner, as `serve`'s do; the status line is drawn on
        // the runner's thread, from its samples. The reporter takes each source's report before
        // capture starts: a report reads counters the capture thread owns once it runs.
        let runner = RecordingRunner(
            controller: recording, events: EventHub(), options: .init(statusEvery: 0.5, firstStatusAt: 0.5))
        // Made on the runner's thread before capture and used there; this thread takes it once
        // the recording has ended (the runner's end hands it over).
        final class Reporter { var current: StatusReporter? }
        let reporter = Reporter()
        let hooks = RecordingRunner.Hooks(
            beforeCapture: { [quiet, json] layout in
                let status = StatusReporter(
                    directory: layout.directory, sources: sources, quiet: quiet, json: json,
                    diskWatch: recording.diskStalls, encodings: controllerSettings.encodings,
                    encoderThreads: controllerSettings.encoderThreads)
                reporter.current = status
            },
            started: {
                guard let status = reporter.current else { preconditionFailure("start() calls beforeCapture") }
                status.writePathLine = recording.writePathLine
                status.printStart()
            },
            status: { sample in reporter.current?.report(sample) },
            stopping: { [quiet, json] reason in
                reporter.current?.finishLine()
                if !quiet && !json { say("stopping (\(reason)): writing what was captured...") }
            })
        let directory: String
        do {
            directory = try runner.start(hooks: hooks)
        } catch let error as RecordingController.StartError {
            say("Error: \(error)")
            if case .diskBelowMinFree = error { throw ExitCode(4) }
            throw ExitCode(64)
        }
        logger.info("recording", metadata: ["session.path": "\(directory)", "streams": "\(sources.count)"])
        if let problem = runner.marksProblem, !quiet { say("warning: \(problem)") }
        let keys = quiet || json ? nil : KeyMarks(runner: runner)
        while !runner.isStopping {
            if let signal = signals.wait(seconds: 0.5) {
                runner.requestStop(signal == SIGINT ? "SIGINT" : "SIGTERM")
                break
            }
        }
        keys?.requestStop()
        // A disk that stopped answering (a share gone, a card that hangs) must not keep the
        // process from ending: past the watchdog's limit it exits, the session left for recover.
        let outcome: RecordingController.Outcome
        switch runner.waitForEnd() {
        case .gaveUp(let why):
            keys?.restoreTerminal()
            exitGivingUp(saying: "\nError: \(why): \(directory)")
        case .stopped(let result):
            keys?.finish()
            outcome = try result.get()
        }
        guard let status = reporter.current else { preconditionFailure("start() calls beforeCapture") }
        status.printSummary(outcome.summary, elapsed: outcome.elapsed, reason: outcome.reason.description)
        logger.info("stopped", metadata: ["reason": "\(outcome.reason)"])
        if let writeFailure = outcome.writeFailure {
            say("Error: \(outcome.reason); the session holds what reached the disk and validates: \(directory)")
            throw ExitCode(isDiskFull(writeFailure) ? 4 : 1)
        }
        if case .diskNearlyFull = outcome.reason {
            if !quiet {
                say("stopped: \(outcome.reason); the session is complete: \(directory)")
            }
            throw ExitCode(4)
        }
        if outcome.summary.contains(where: { $0.captureError != nil }) { throw ExitCode(3) }
    }
}
