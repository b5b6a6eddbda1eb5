import ArgumentParser
import FieldcapArchive
import FieldcapCore
import FieldcapSession
import SyncField

struct Extract: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "extract",
        abstract: "Write one session holding a wall-clock range of a recording, across its segments.",
        discussion: """
            Every frame and sample whose capture time falls in [--from, --to) goes into
            one new SyncField 0.1 session: the range is mapped into CLOCK_MONOTONIC_RAW
            through each segment's own sync point, frames are copied into the new videos
            byte for byte (no re-encoding), timestamp and sensor lines are copied as
            recorded with frame_number counted from 0, and the manifest, sync point and
            fieldcap.json (with where the extract came from) are written. The result is
            validated.

            SOURCE is a segmented recording, a session, or a root: in a root, the one
            recording or session that covers the range is used. Only finished segments are
            read, so a range of a recording that is still going is taken from its finished
            segments.

              fieldcap extract sessions/rig-20261123T140000Z \\
                  --from 2026-11-23T14:02:00Z --to 2026-11-23T14:04:00Z --out clip-1402

            --blur-faces covers the faces in the cameras' frames as they are copied
            (as `fieldcap export --blur-faces` does: pixelated, found by the MTCNN
            detector and carried between detections): the same frames with the same
            numbers and times, each frame's boxes in its frame log line
            (faces_covered) and each camera's report in fieldcap.json. Each video is
            stored as recorded: raw frames covered in place (Z16 depth is copied as
            recorded), MJPEG written again as JPEG of the same subsampling (quality
            95), FFV1 coded again as FFV1; a camera coded across frames (H.264, HEVC,
            FWHT) is refused before anything is written.

              fieldcap extract sessions/rig-20261123T140000Z --mark near-miss --out near-miss-1

            --mark takes the window around a mark (`fieldcap mark`): by its id (m3), or by
            its label when one mark has it; in a root, the recording holding it is found.

              fieldcap extract sessions/rig-20261123T140000Z --blur-faces \\
                  --from 2026-11-23T14:02:00Z --to 2026-11-23T14:04:00Z --out clip-covered

            Times are UTC (`Z`) or carry their offset (`+01:00`), with fractions of a
            second if wanted. Exit status: 0 for a valid extract, 1 when nothing could be
            extracted (the range is outside the recording or holds no data; nothing is
            written) or the result did not validate, 64 for a usage error.
            """)

    @Argument(help: "A segmented recording, a session, or a root of them.", completion: .directory)
    var source: String

    @Option(help: ArgumentHelp("The range's start, included: 2026-11-23T14:02:00Z.", valueName: "TIME"))
    var from: String?

    @Option(help: ArgumentHelp("The range's end, not included: 2026-11-23T14:04:00Z.", valueName: "TIME"))
    var to: String?

    @Option(
        help: ArgumentHelp(
            "Instead of --from/--to: the window around a mark (`fieldcap mark`), by its id (m3) or label.",
            valueName: "LABEL|ID"))
    var mark: String?

    @Option(help: ArgumentHelp("The session directory to create (must not exist).", valueName: "DIR"))
    var out: String

    @OptionGroup var faces: FaceOptions

    /// `--from`/`--to` as nanoseconds since the epoch, or the usage error naming the option.
    static func time(_ text: String, option: String, example: String) throws -> UInt64 {
        guard let ns = UTCTime.parse(text) else {
            throw PlanError(
                "\(option) \(text) is not a time fieldcap reads; write it as \(example) (UTC) or with its offset"
            ).exitForCommand()
        }
        return ns
    }

    func validate() throws {
        if mark != nil && (from != nil || to != nil) {
            throw ValidationError("--mark names the range itself: give either --mark or --from and --to, not both")
        }
        if mark == nil && (from == nil || to == nil) {
            throw ValidationError("give the range: --from TIME and --to TIME, or --mark LABEL|ID")
        }
    }

    /// The range asked for, UTC nanoseconds [from, to), and where to take it from (a mark's own
    /// recording).
    func range() throws -> (fromNs: UInt64, toNs: UInt64, source: String) {
        if let mark {
            do throws(MarkLookup.Failure) {
                let found = try MarkLookup.find(mark, in: source)
                print(
                    "mark \(found.mark.id.printable) \"\(found.mark.label.printable)\" at \(found.mark.utc.printable) "
                        + "in \(found.directory.printable): "
                        + "\(SyncPoint.isoDatetime(wallClockNs: found.fromNs)) to "
                        + "\(SyncPoint.isoDatetime(wallClockNs: found.toNs))")
                return (found.fromNs, found.toNs, found.directory)
            } catch {
                say("Error: \(error.message)")
                throw ExitCode(1)
            }
        }
        let (from, to) = (from ?? "", to ?? "")
        let fromNs = try Self.time(from, option: "--from", example: "2026-11-23T14:02:00Z")
        let toNs = try Self.time(to, option: "--to", example: "2026-11-23T14:04:00Z")
        guard toNs > fromNs else {
            throw PlanError("--to \(to) is not after --from \(from): nothing written").exitForCommand()
        }
        return (fromNs, toNs, source)
    }

    func run() throws {
        let (fromNs, toNs, source) = try range()
        let settings = try faces.settings()
        let outcome: RangeExtractor.Outcome
        do {
            outcome = try RangeExtractor.extract(
                RangeExtractor.Request(source: source, fromNs: fromNs, toNs: toNs, out: out, faces: settings),
                say: { print("  \($0)") })
        } catch let failure as RangeExtractor.Failure {
            say("Error: \(failure.message)")
            throw ExitCode(1)
        }
        for problem in outcome.report.problems { print("\(outcome.out)/\(problem)") }
        let counts = outcome.records.map { "\($0.id) \($0.count)" }.joined(separator: ", ")
        guard outcome.report.isValid else {
            print("\(outcome.out): extracted (\(counts)), but \(outcome.report.problems.count) problems; see above")
            throw ExitCode(1)
        }
        print(
            "\(outcome.out): valid SyncField 0.1 session from \(outcome.parts.count) "
                + "segment\(outcome.parts.count == 1 ? "" : "s"): \(counts)"
        )
    }
}
