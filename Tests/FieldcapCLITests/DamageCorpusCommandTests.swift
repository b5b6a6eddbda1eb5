import Foundation
import TestSupport
import Testing

/// The damage corpus on the command line (#42): a complete session, a killed one and a killed
/// segmented recording, each with raw YUYV, MJPEG, JPEG-encoded and FFV1-encoded cameras and an
/// IMU, damaged by TestSupport's SessionDamage, then read by every command that reads one
/// (validate, sessions, request, export, extract) and recovered. Required of each: no signal, no hang, a
/// clear message on failure and never a crash report; the readers change nothing; a refused
/// recover changes nothing; a recover that goes ahead deletes only what a recorder left unused
/// (its disk reserve, a segment it had opened ahead, an index write it cut short) and never
/// touches a file fieldcap did not write or anything outside the session. The bases are recorded
/// afresh each run (killed at a moment, so their files differ a little): a failure is replayed
/// from what it prints (the file and the damage), not from its seed alone.
@Suite("Damage corpus: every reading command on damaged JPEG, FFV1 and segmented recordings")
struct DamageCorpusCommandTests {
    static let cameras = [
        "--cam", "synthetic:64x48@30,id=raw", "--cam", "synthetic:64x48@30,id=mjpg,format=MJPG",
        "--cam", "synthetic:64x48@30,id=jpeg,encode=jpeg", "--cam",
        "synthetic:64x48@30,id=ffv1,format=GREY,encode=ffv1",
        "--imu", "synthetic:200,id=imu",
    ]
    /// A file of the user's in each session: nothing may change it.
    static let foreign = "notes.txt"

    /// Records a base: `complete` (1 s), `killed` (SIGKILL 1.2 s in) or `segmented` (500 ms
    /// segments, SIGKILL 1.8 s in).
    static func base(_ kind: String) throws -> String {
        let out = freshPath("damage-base-\(kind)")
        let extra = kind == "segmented" ? ["--segment", "500ms"] : kind == "complete" ? ["--duration", "1s"] : []
        let recorded = try FieldcapProcess.run(cameras + extra + ["--out", out, "-q"]) { process in
            // A mark in every base: its line (events.ndjson) and the index's marks get damaged too.
            let marked = markWhenRunning([out, "damage", "--note", "a note", "--before", "1s"])
            #expect(marked?.status == 0, "\(marked?.stderr ?? "")")
            guard kind != "complete" else { return }
            usleep(kind == "segmented" ? 1_800_000 : 1_200_000)
            kill(process.processIdentifier, SIGKILL)
        }
        if kind == "complete" { #expect(recorded.status == 0, "\(recorded.stderr)") }
        // A kill between the index's write and its rename leaves the new index beside the old as
        // recording.json.tmp (a busy machine's run caught it): every segmented base has one, and
        // half the damaged copies keep it.
        let index = out + "/recording.json"
        if kind == "segmented" && !FileManager.default.fileExists(atPath: index + ".tmp") {
            try FileManager.default.copyItem(atPath: index, toPath: index + ".tmp")
        }
        // A base with frames in its videos, or the corpus would damage next to nothing.
        let videos = try SessionDamage.everyFile(under: out).filter { $0.hasSuffix(".mkv") }
        let sizes = try videos.map { try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int ?? 0 }
        #expect(sizes.filter { $0 > 4096 }.count >= 4, "\(kind): \(zip(videos, sizes).map { "\($0) \($1)" })")
        try Data("the operator's notes\n".utf8).write(to: URL(fileURLWithPath: "\(out)/\(foreign)"))
        return out
    }

    /// A command, killed if it runs past a minute (a hang: status 124, or SIGKILL). GNU timeout
    /// re-raises a child's signal on itself, so a crash shows as `signalled`.
    static func run(_ arguments: [String]) throws -> ExecutableRun {
        try runExecutable("/usr/bin/timeout", ["--kill-after=5", "60", FieldcapProcess.executable.path] + arguments)
    }

    /// What every command must do, whatever it was given: end, without a signal, and say why it
    /// failed in one `Error:` line (validate reports the session's problems instead, and recover
    /// and extract may say they went ahead and what problems are left).
    static func expectSane(_ run: ExecutableRun, _ what: String, command: String) {
        #expect(
            !run.signalled && run.status != 124, "\(what): crashed or hung (status \(run.status)): \(run.output)")
        for crash in ["Fatal error", "Stack dump", "Backtrace", "💣", "Segmentation fault"] {
            #expect(!run.output.contains(crash), "\(what): crashed: \(run.output)")
        }
        guard run.status != 0 else { return }
        #expect(!run.output.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(what): failed silently")
        let errors = run.output.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
        switch command {
        case "validate": break
        // A pair refused (a still rig, damaged frames) is a line of its own, not an Error.
        case "check-sync":
            #expect(errors.count == 1 || (errors.isEmpty && run.output.contains("refused")), "\(what): \(run.output)")
        // An extract or a recovery that went ahead and does not validate lists the problems.
        case "recover", "extract":
            #expect(errors.count == 1 || (errors.isEmpty && run.output.contains("problem")), "\(what): \(run.output)")
        default: #expect(errors.count == 1, "\(what): not one Error line: \(run.output)")
        }
    }

    /// A segment directory a killed recorder had opened ahead and never written to: recover
    /// removes it.
    static func unusedSegment(_ directory: String, in files: [String: Data]) -> Bool {
        let held = files.filter { $0.key.hasPrefix(directory + "/") }
        return held.allSatisfy { name, bytes in
            name.hasSuffix("fieldcap.json") || bytes.isEmpty || (name.hasSuffix(".mkv") && bytes.count < 1024)
        }
    }

    @Test(
        """
        30 seeded damages to complete, killed and segmented recordings, each with a mark: validate, sessions, \
        request, export, extract (by time and by mark), check-sync and recover never crash, hang, fail unclearly, or change what they must not
        """
    )
    func corpus() throws {
        let bases = try ["complete", "killed", "segmented"].map { ($0, try Self.base($0)) }
        defer { for (_, path) in bases { try? FileManager.default.removeItem(atPath: path) } }
        let outside = freshPath("damage-outside")
        try Data("not the session's".utf8).write(to: URL(fileURLWithPath: outside))
        defer { try? FileManager.default.removeItem(atPath: outside) }
        var outcomes: [String: Int] = [:]
        for seed in UInt64(1)...30 {
            let (kind, base) = bases[Int(seed % 3)]
            let root = freshPath("damage-root")
            let path = "\(root)/rig-\(kind)"
            let out = freshPath("damage-out")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            defer {
                try? FileManager.default.removeItem(atPath: root)
                try? FileManager.default.removeItem(atPath: out)
            }
            try FileManager.default.copyItem(atPath: base, toPath: path)
            // Half the segmented copies as if the kill came after the index's rename instead.
            if kind == "segmented" && (seed / 3) % 2 == 0 {
                try FileManager.default.removeItem(atPath: path + "/recording.json.tmp")
            }
            let what = "seed \(seed), \(kind): " + (try SessionDamage.apply(to: path, seed: seed, outside: outside))

            let before = try SessionDamage.contents(root)
            for arguments in [
                ["validate", path], ["sessions", root], ["request", path],
                ["export", path, "--format", "mcap", "--out", "\(out)/x.mcap"],
                [
                    "extract", path, "--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z", "--out",
                    "\(out)/clip",
                ],
                ["check-sync", path, "--max-offset", "50"],
                ["extract", path, "--mark", "damage", "--out", "\(out)/marked"],
            ] {
                let run = try Self.run(arguments)
                Self.expectSane(run, "\(what): \(arguments[0])", command: arguments[0])
                #expect(try SessionDamage.contents(root) == before, "\(what): \(arguments[0]) changed the session")
                outcomes["\(arguments[0]) exit \(run.status)", default: 0] += 1
            }

            let recovered = try Self.run(["recover", path])
            Self.expectSane(recovered, "\(what): recover", command: "recover")
            let after = try SessionDamage.contents(root)
            // Refused ("Error: ..."): nothing changed. Exit 1 without an error is a recovery that
            // went ahead and left problems validate reports: held to the rules below.
            if recovered.output.contains("Error: ") {
                let changed = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
                #expect(changed.isEmpty, "\(what): recover refused (\(recovered.output)) but changed \(changed)")
            } else {
                for name in before.keys
                where after[name] == nil && !name.hasSuffix(".fieldcap-reserve") {
                    // An interrupted atomic write's temporary file: recover wrote the index anew
                    // through the same name (fieldcap's own, rebuilt from the segments).
                    if name.hasSuffix("/recording.json.tmp") && after[String(name.dropLast(4))] != nil { continue }
                    let directory = (name as NSString).deletingLastPathComponent
                    #expect(Self.unusedSegment(directory, in: before), "\(what): recover deleted \(name)")
                }
                let notes = "rig-\(kind)/\(Self.foreign)"
                #expect(after[notes] == before[notes], "\(what): recover changed the user's file")
            }
            outcomes["recover exit \(recovered.status)", default: 0] += 1
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: outside)) == Data("not the session's".utf8),
                "\(what): a file outside the session changed")
        }
        print("damage corpus (commands): \(outcomes.sorted { $0.key < $1.key })")
        #expect((outcomes["recover exit 0"] ?? 0) > 0 && (outcomes["export exit 0"] ?? 0) > 0, "\(outcomes)")
    }
}
