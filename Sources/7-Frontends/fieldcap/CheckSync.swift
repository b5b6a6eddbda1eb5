import ArgumentParser
import FieldcapCore
import FieldcapExport
import FieldcapOutput
import FieldcapSession
import FieldcapSyncCheck
import FoundationEssentials
import SyncField

struct CheckSync: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-sync",
        abstract: "Measure the time offset between each camera and each IMU's gyroscope of a session.",
        discussion: """
            Record a few seconds (10 s is plenty) while turning the rig by hand about all \
            three axes, irregularly, with the cameras seeing texture, then:
              fieldcap check-sync sessions/<host>-<UTC time>

            Each camera's turn between consecutive frames is found by aligning the frames \
            (shift and in-plane rotation, through the focal length of the session's \
            intrinsics, or of a 60° field of view without them) and cross-correlated with \
            the gyroscope's turn over the same intervals, shifted by each candidate offset; \
            the best is refined between steps by a parabola. The simplest peer method \
            (image-difference energy against the gyroscope) is measured beside it.

            Each camera-IMU pair prints its offset: how much later the camera's stamps are \
            than the IMU's for the same instant (Kalibr's timeshift_cam_imu is its \
            negative), the correlation at the peak, the confidence (how far the peak \
            stands above the next best), and the gyroscope's rms rate. A pair whose motion \
            was too weak, or matched no offset clearly, is refused with what to do. A \
            calibration with another timeshift_cam_imu is warned about, and so is an \
            offset larger than the camera's own uncertainty_ns (where its frames give one) \
            by more than the estimate's own error (1 ms).

            One minute is analysed: the 60 s in which the first IMU's gyroscope turned the \
            most (its bias removed), or the whole recording when it is shorter, or the \
            stretch --from/--to give; only that stretch's frames are aligned and its \
            gyroscope samples held, so an hour's recording costs what a minute's does. Frame \
            pairs across lost frames (longer than 1.5 median periods) or a camera's absence, \
            and pairs whose interval spans a gap in the gyroscope, are left out; a frame that \
            does not decode or is of another size is skipped and counted. An IMU with only \
            some gyroscope axes reads the others as 0, and says so. A camera whose frames \
            cannot be read (a hardware encoder's H.264 or HEVC) or are too small to align \
            (under 16x12 after averaging) is refused and the others checked.

            --save puts the result, as --json prints it, into the session's fieldcap.json as \
            sync_check (an earlier one replaced; every other member, and the SyncField files, \
            left as recorded), where validate checks it, and `fieldcap serve` shows it \
            (GET /api/v1/sessions/NAME and the web page). `serve --check-sync` does this after \
            each recording.

            Exit status: 0 when every pair has an offset, 1 when one is refused or the \
            session cannot be read, 64 for a usage error.
            """
    )

    @Argument(
        help: "The session directory (the one holding manifest.json), or a segmented recording's (its first segment).",
        completion: .directory)
    var directory: String

    @Option(help: "How far to search either way, in milliseconds.")
    var maxOffset: Double = 500

    @Option(help: "Analyse from this many seconds after the session's start (with --to; 60 s when alone).")
    var from: Double?

    @Option(help: "Analyse up to this many seconds after the session's start.")
    var to: Double?

    @Flag(help: "Print the result as one JSON object (the window and the pairs), for scripts.")
    var json = false

    @Flag(help: "Also put the result into the session's fieldcap.json (sync_check).")
    var save = false

    func validate() throws {
        guard maxOffset > 0, maxOffset <= 5000 else {
            throw ValidationError("--max-offset \(maxOffset) must be above 0 and at most 5000 (ms)")
        }
        for (name, value) in [("--from", from), ("--to", to)] {
            if let value, !(value.isFinite && value >= 0) {
                throw ValidationError(
                    "\(name) \(value) must be a number of seconds from the session's start, 0 or more")
            }
        }
        if let to, to <= (from ?? 0) {
            throw ValidationError(
                "--to \(to) must be after --from \(from ?? 0) (seconds from the session's start)")
        }
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory else {
            throw ValidationError(
                "\(directory) is not a directory; give the session directory (the one holding manifest.json)")
        }
    }

    /// The stretch `--from`/`--to` give, in seconds from the session's start; nil without either.
    var window: ClosedRange<Double>? {
        guard from != nil || to != nil else { return nil }
        let start = from ?? 0
        return start...(to ?? start + SessionSyncCheck.windowLength)
    }

    func run() throws {
        let report: SyncCheckReport
        // A segmented recording is checked in its first segment, where a rig is waved.
        let session = SessionSyncCheck.session(for: directory) ?? directory
        if session != directory { say("Note: checking the recording's first segment, \(session)") }
        do {
            report = try SessionSyncCheck.check(directory: session, maximumOffset: maxOffset / 1000, window: window)
        } catch {
            say("Error: \(error.message)")
            throw ExitCode(error.code == .request ? 64 : 1)
        }
        let pairs = report.pairs
        let entry = report.entry()
        if save {
            do { try Sidecar.storeSyncCheck(entry, layout: SessionLayout(directory: session)) } catch {
                say("Error: the result cannot be saved: \(error); the session's directory must be writable")
                throw ExitCode(1)
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(entry.json), as: UTF8.self))
        } else {
            if case .mostExcited(let imu) = report.windowChoice {
                say("Note: analysed \(Self.seconds(report.window)) of the session, where \(imu) turned the most")
            }
            for pair in pairs { print(Self.line(pair)) }
            for pair in pairs where pair.exceedsFrameUncertainty {
                say(
                    "Warning: \(pair.camera)–\(pair.imu): the offset, "
                        + "\(Self.milliseconds(try! pair.alignment.get().offset)) ms, is larger than the camera's "
                        + "uncertainty_ns (\(cFormat("%.2f", pair.frameUncertainty! * 1000)) ms, the median): "
                        + "its stamps are not the instant they claim; correct them by the offset")
            }
            for pair in pairs where pair.disagreesWithCalibration {
                say(
                    "Warning: \(pair.camera)–\(pair.imu): the calibration's timeshift_cam_imu is "
                        + "\(Self.milliseconds(pair.calibratedTimeshift!)) ms, the measured one "
                        + "\(Self.milliseconds(try! pair.alignment.get().timeshiftCamIMU)) ms: calibrate again, "
                        + "or the camera's stamps moved (a power cycle, another driver)")
            }
        }
        if pairs.contains(where: { (try? $0.alignment.get()) == nil }) { throw ExitCode(1) }
    }

    static func milliseconds(_ seconds: Double) -> String { cFormat("%+.2f", seconds * 1000) }

    static func seconds(_ window: ClosedRange<Double>) -> String {
        cFormat("%.1f–%.1f s", window.lowerBound, window.upperBound)
    }

    static func line(_ pair: SyncCheckPair) -> String {
        let name = "\(pair.camera)–\(pair.imu)"
        switch pair.alignment {
        case .failure(let refusal): return "\(name): refused: \(refusal.message)"
        case .success(let estimate):
            let peer =
                switch pair.differenceEnergy {
                case .success(let peer): "\(milliseconds(peer.offset)) ms"
                case .failure(let refusal): "refused (\(refusal.reason.rawValue))"
                }
            return "\(name): offset \(milliseconds(estimate.offset)) ms (camera stamps later than the IMU's), "
                + cFormat("correlation %.3f, confidence %.2f, ", estimate.peakCorrelation, estimate.confidence)
                + cFormat("gyro %.2f rad/s rms, %d frame pairs, ", estimate.gyroRMSRate, estimate.pairs)
                + "\(estimate.method.rawValue)\(pair.usedIntrinsics ? " with the intrinsics" : ""); "
                + "difference-energy peer: \(peer)"
                + (pair.missingGyroAxes.isEmpty
                    ? ""
                    : "; the IMU has no gyro_\(pair.missingGyroAxes.joined(separator: "/")), read as 0")
                + (pair.skippedFrames == 0 ? "" : "; \(pair.skippedFrames) unreadable frames left out")
        }
    }
}
