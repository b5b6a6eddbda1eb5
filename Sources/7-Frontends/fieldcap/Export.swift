import ArgumentParser
import FieldcapArchive
import FieldcapExport
import FieldcapSession
import FieldcapSystem
import Glibc
import SyncField
import Synchronization

struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a session (or a range of a recording) as MCAP, a EuRoC folder, an image folder or MP4s.",
        discussion: """
            FORMAT is one of:

              mcap    one MCAP file with the ROS 2 profile, for Foxglove, `ros2 bag` and
                      the Python `mcap`/`rosbags` libraries. Cameras on /ID/image_raw
                      (sensor_msgs/msg/Image, raw bytes with their ROS encoding:
                      yuv422_yuy2, mono8, mono16, nv12, 16UC1) or /ID/image_raw/compressed
                      (MJPEG); IMUs on /ID/imu (sensor_msgs/msg/Imu, no orientation),
                      other channels on /ID/channels (fieldcap_msgs/msg/SensorChannels);
                      a stream a program fed (--sensor feed:) also on /ID/json, each
                      record as it was sent (JSON, not in a --rosbag2 bag).
                      Stamps and log times are UTC ns mapped from capture_ns through the
                      sync point; the metadata record `fieldcap` holds the mapping. --out
                      names the .mcap file; with --rosbag2, a bag directory (metadata.yaml
                      and NAME_0.mcap).

              euroc   the ASL/EuRoC folder (ORB-SLAM3, Basalt, VINS-Fusion, Kalibr) at
                      --out: mav0/camN/data/<t_ns>.png with data.csv and sensor.yaml,
                      mav0/imuN/data.csv (gyro, then accel) with sensor.yaml,
                      mav0/imuN.csv for Kalibr, times.txt (cam0's times, for ORB-SLAM3).
                      8-bit grey PNGs (--grey, the default, as EuRoC's), RGB with
                      --colour; 16-bit depth cameras (--depth) as 16-bit PNGs in
                      mav0/depthN. Times are UTC ns; images outside imu0's span are left
                      out.
              images  one camera as an image folder in the iOS 3D Logger's layout
                      (photogrammetry, NeRF): rgb/000000.jpg (--quality, 90), frames.jsonl
                      (time, intrinsics, the nearest IMU sample), metadata.json; a --depth
                      camera's nearest frame as depth/000000.png (16-bit mm), .bin
                      (float32 m) and confidence/. --every N and --fps F thin the frames.
              mp4     each camera as an H.264 MP4 that browsers, phones and VLC play:
                      --out/ID.mp4. Lossy (libx264, CRF 23), 4:2:0 from the camera's own
                      samples; each frame shown at its capture_ns since the camera's
                      first, so gaps play as recorded. For people, not measurement: the
                      session's frame logs keep the times.

            --blur-faces covers the faces in the cameras' frames before they are written
            (all four formats): MTCNN (OpenCV's DNN module, the model installed by
            scripts/install-face-model) looks for faces in every frame (every N-th with
            --face-detect-every, carrying each face between), and each box, grown by a
            quarter of its size on every side, is pixelated in the frame: six blocks
            across, each its own average. A face is covered from half a second before the
            detector first finds it (the export looks ahead) to half a second after it
            last saw it; a face it never finds (too small, in profile, too dark) stays as
            it is: look at what was covered before sharing. Grey, Y16, YUYV, NV12 and
            Bayer frames (and FFV1 cameras, decoded) are covered as they are, and MJPEG
            cameras' frames in their YUV planes, written again as JPEG of the same
            subsampling (quality 95). What was covered is kept beside the frames (images:
            metadata.json's faces_covered; euroc: mav0/camN/faces_covered.json; mp4:
            ID.faces_covered.json; mcap: the metadata record fieldcap.faces_covered). The
            session itself is never changed. Needs libFieldcapFaceDetector.so
            (scripts/build-release builds it beside fieldcap) and Debian's
            libopencv-dnn406 and libopencv-imgproc406.

            A camera's intrinsics come from the session (`fieldcap record --intrinsics`):
            MCAP gets /ID/camera_info, EuRoC's sensor.yaml its pinhole model, images its
            matrix.

            The input is never modified. The output is written under a hidden name beside
            --out and renamed when whole: an interrupted export (Ctrl-C) leaves nothing
            that looks finished. An --out that exists is refused.

              fieldcap export sessions/rig-20261123T140000Z --format mcap --out run.mcap
              fieldcap export sessions/rig-20261123T140000Z --format mcap --rosbag2 \\
                  --out run_bag
              fieldcap export sessions/rig-20261123T140000Z --format euroc --out run_euroc
              fieldcap export sessions/rig-20261123T140000Z --format images --fps 2 \\
                  --out run_images
              fieldcap export sessions/rig-20261123T140000Z --format mp4 --out run_videos
              fieldcap export sessions/rig-20261123T140000Z --format images --blur-faces \\
                  --out run_shared
              fieldcap export recordings/rig-20261123T140000Z --format mcap \\
                  --out clip.mcap \\
                  --from 2026-11-23T14:02:00Z --to 2026-11-23T14:04:00Z

            Exit status: 0 when written, 1 when the session cannot be exported (it does
            not validate, is not finished, holds no data in the range) or writing failed,
            64 for a usage error, 130 when interrupted. Nothing is left written unless the
            status is 0.
            """)

    @Argument(help: "A session, or a segmented recording (all of it, or --from/--to).", completion: .directory)
    var source: String

    @Option(help: ArgumentHelp("mcap, euroc, images or mp4.", valueName: "FORMAT"))
    var format: String

    @Option(help: ArgumentHelp("The file (mcap) or directory to create; must not exist.", valueName: "PATH"))
    var out: String

    @Option(help: ArgumentHelp("Only these streams, by id: cam0,imu0.", valueName: "IDS"))
    var streams: String?

    @Option(help: ArgumentHelp("The range's start, included: 2026-11-23T14:02:00Z.", valueName: "TIME"))
    var from: String?

    @Option(help: ArgumentHelp("The range's end, not included: 2026-11-23T14:04:00Z.", valueName: "TIME"))
    var to: String?

    @Option(help: ArgumentHelp("MCAP chunk compression: zstd (default), lz4 or none.", valueName: "CODEC"))
    var compression: String = "zstd"

    @Flag(help: "mcap: write a rosbag2 directory (metadata.yaml and the .mcap) at --out.")
    var rosbag2 = false

    @Option(
        help: ArgumentHelp(
            "Y16 cameras that hold depth in millimetres (Z16 cameras always do): cam1.", valueName: "IDS"))
    var depth: String?

    @Flag(help: "euroc: 8-bit grey PNGs, the frame's luma (the default, as EuRoC's cameras are).")
    var grey = false

    @Flag(help: "euroc: RGB PNGs instead of 8-bit grey.")
    var colour = false

    @Option(help: ArgumentHelp("images: JPEG quality, 1 to 100 (90).", valueName: "Q"))
    var quality: Int = 90

    @Option(help: ArgumentHelp("images: keep every N-th frame.", valueName: "N"))
    var every: Int = 1

    @Option(help: ArgumentHelp("images: keep at most F frames a second.", valueName: "F"))
    var fps: Double?

    @OptionGroup var faces: FaceOptions

    func run() throws {
        guard let format = ExportFormat(rawValue: format) else {
            throw PlanError("--format \(format) is not one fieldcap writes; use mcap, euroc, images or mp4")
                .exitForCommand()
        }
        if (colour || grey) && format != .euroc {
            throw PlanError("--\(colour ? "colour" : "grey") is an option of --format euroc").exitForCommand()
        }
        if colour && grey {
            throw PlanError("--grey and --colour: choose one (--grey is the default)").exitForCommand()
        }
        if format != .images && (quality != 90 || every != 1 || fps != nil) {
            throw PlanError("--quality, --every and --fps are options of --format images").exitForCommand()
        }
        guard (1...100).contains(quality) else {
            throw PlanError("--quality \(quality): give 1 to 100 (90 is the Logger's)").exitForCommand()
        }
        guard every >= 1 else { throw PlanError("--every \(every): give 1 or more").exitForCommand() }
        if let fps, !(fps > 0 && fps.isFinite) {
            throw PlanError("--fps \(fps): give a rate above 0, e.g. 2").exitForCommand()
        }
        guard let compression = MCAPCompression(rawValue: compression) else {
            throw PlanError("--compression \(compression): use zstd, lz4 or none").exitForCommand()
        }
        var request = SessionExporter.Request(source: source, format: format, out: out)
        request.faces = try faces.settings()
        request.streams = streams.map { $0.split(separator: ",").map(String.init) }
        request.depthStreams = depth.map { $0.split(separator: ",").map(String.init) } ?? []
        request.compression = compression
        request.rosbag2 = rosbag2
        request.colour = colour
        request.quality = quality
        request.every = every
        request.fps = fps
        request.fromNs = try from.map { try Extract.time($0, option: "--from", example: "2026-11-23T14:02:00Z") }
        request.toNs = try to.map { try Extract.time($0, option: "--to", example: "2026-11-23T14:04:00Z") }
        if let fromNs = request.fromNs, let toNs = request.toNs, toNs <= fromNs {
            throw PlanError("--to \(to!) is not after --from \(from!): nothing written").exitForCommand()
        }

        // Ctrl-C and SIGTERM end the export between two frames; its partial output is removed.
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        let stop = InterruptSignal()
        detachThread(named: "fc-signals") {
            while stop.signal.load(ordering: .relaxed) == 0 {
                if let signal = signals.wait(seconds: 0.2) { stop.signal.store(signal, ordering: .relaxed) }
            }
        }
        defer { _ = stop.signal.compareExchange(expected: 0, desired: -1, ordering: .relaxed) }

        let line = ExportProgressLine()
        let outcome: SessionExporter.Outcome
        do {
            outcome = try SessionExporter.export(
                request, progress: line.show, isCancelled: { stop.signal.load(ordering: .relaxed) > 0 })
        } catch {
            line.erase()
            say("Error: \(error.message)")
            switch error.code {
            case .request: throw ExitCode(64)
            case .cancelled: throw ExitCode(130)
            case .session, .output: throw ExitCode(1)
            }
        }
        line.erase()
        for text in outcome.lines { print("  \(text)") }
        print("\(outcome.out): written")
    }
}

/// The signal that stopped a command (0: none yet; -1: the command ended first).
final class InterruptSignal: Sendable {
    let signal = Atomic<Int32>(0)
}

/// "writing: 1200 of 3000 frames (40%)" on the terminal's stderr, redrawn at most four times a
/// second; on a pipe or log, a line every ten seconds.
final class ExportProgressLine: @unchecked Sendable {
    private let line = TerminalLine()
    private var lastDrawn: UInt64 = 0

    func show(_ progress: SessionExporter.Progress) {
        let now = MonotonicClock.now()
        let interval: UInt64 = line.isTerminal ? 250_000_000 : 10_000_000_000
        if lastDrawn == 0 { lastDrawn = now }
        guard now &- lastDrawn >= interval else { return }
        lastDrawn = now
        var text = progress.stage.rawValue
        switch progress.stage {
        case .writing:
            text +=
                ": \(progress.done)"
                + (progress.total > 0
                    ? " of \(progress.total) frames (\(100 * progress.done / progress.total)%)" : " frames")
        case .validating where progress.total > 0:
            text += ": \(100 * progress.done / progress.total)%"
        default: break
        }
        if line.isTerminal { line.draw(text) } else { say(text) }
    }

    func erase() { line.erase() }
}
