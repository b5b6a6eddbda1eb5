import FieldcapArchive
import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import SyncField
import Testing

@Suite("The sessions browser and sessions rm")
struct SessionCatalogTests {
    /// A root with the shared recording, a session of one segment copied out of it, a copy of
    /// that session marked as still recording (nobody holds it: needs recover), and a directory
    /// of another program's.
    static func root() throws -> (root: String, recording: String, segments: [RecordingIndex.Segment]) {
        let copy = try RecordingFixture.copy()
        let index = try #require(RecordingIndex.read(directory: copy.directory))
        let segments = index.presentSegments
        let fm = FileManager.default
        try fm.copyItem(atPath: "\(copy.directory)/\(segments[0].directory)", toPath: "\(copy.root)/single")
        try fm.copyItem(atPath: "\(copy.directory)/\(segments[1].directory)", toPath: "\(copy.root)/crashed")
        let sidecar = SessionLayout(directory: "\(copy.root)/crashed")
        var contents = try #require(Sidecar.Contents(layout: sidecar))
        contents.document["state"] = "recording"
        try Sidecar.store(contents.document, layout: sidecar)
        try fm.createDirectory(atPath: "\(copy.root)/photos", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: "\(copy.root)/photos/a.jpg"))
        return (copy.root, (copy.directory as NSString).lastPathComponent, segments)
    }

    @Test("lists sessions, recordings and foreign directories with their states, counts and sizes")
    func lists() throws {
        let (root, recording, segments) = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let entries = try SessionCatalog.entries(root: root)
        let byName = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0) })
        #expect(Set(byName.keys) == [recording, "single", "crashed", "photos"])

        let whole = try #require(byName[recording])
        #expect(whole.kind == .recording && whole.state == .complete)
        #expect(whole.segments == segments.count && whole.segmentsDeleted == 0)
        let index = try #require(RecordingIndex.read(directory: "\(root)/\(recording)"))
        let imuRecords = index.presentSegments.reduce(0) { $0 + ($1.streams?["imu"]?.records ?? 0) }
        #expect(whole.streams.first { $0.id == "imu" }?.records == imuRecords)
        #expect(whole.streams.first { $0.id == "cam0" }?.format == "64x48 YUYV")
        #expect(whole.bytes > 0)
        let span = try #require(whole.durationSeconds)
        #expect(span > 3.5 && span < 5.5, "\(span)")

        let single = try #require(byName["single"])
        #expect(single.kind == .session && single.state == .complete)
        let manifest = try RecordingFixture.lines("\(root)/single/imu.timestamps.jsonl").count
        #expect(single.streams.first { $0.id == "imu" }?.records == manifest)
        #expect(byName["crashed"]?.state == .needsRecover)
        #expect(byName["photos"]?.state == .foreign && byName["photos"]?.kind == .foreign)

        // A recorder holding the directory makes it "recording".
        let lock = try RecordingLock(directory: "\(root)/crashed")
        #expect(SessionCatalog.entry(directory: "\(root)/crashed", name: "crashed").state == .recording)
        lock.release()
        #expect(SessionCatalog.entry(directory: "\(root)/crashed", name: "crashed").state == .needsRecover)

        // Newest first: the copies share their segments' start times, the recording starts
        // with the first of them; the foreign directory has no start and comes last.
        #expect(entries.last?.name == "photos")
        let starts = entries.compactMap(\.startNs)
        #expect(starts == starts.sorted(by: >))

        // --json: the entries as a script reads them.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(entries)) as! [[String: Any]]
        let first = try #require(json.first { $0["name"] as? String == recording })
        #expect(first["state"] as? String == "complete" && first["segments"] as? Int == segments.count)
        #expect((first["start_utc"] as? String).flatMap(UTCTime.parse) != nil)
        #expect(json.first { $0["name"] as? String == "crashed" }?["state"] as? String == "needs recover")
    }

    @Test("rm by name: a refused name deletes nothing; a segment's deletion is in the index")
    func removesByName() throws {
        let (root, recording, segments) = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        // Refused: not fieldcap's, a stray file in a session, a name outside the root.
        try Data("notes".utf8).write(to: URL(fileURLWithPath: "\(root)/single/notes.txt"))
        let refused = SessionRemoval.plan(root: root, names: ["photos", "single", "../etc", "nothing-here"])
        #expect(refused.targets.isEmpty)
        #expect(refused.refused.count == 4)
        #expect(refused.refused[0].contains("not a fieldcap session or recording"))
        #expect(refused.refused[1].contains("holds notes.txt, which fieldcap did not write"))
        try fm.removeItem(atPath: "\(root)/single/notes.txt")

        // Live: held by a recorder.
        let lock = try RecordingLock(directory: "\(root)/\(recording)")
        let live = SessionRemoval.plan(root: root, names: ["\(recording)/\(segments[0].directory)", recording])
        #expect(live.targets.isEmpty && live.refused.count == 2)
        #expect(live.refused.allSatisfy { $0.contains("being recorded") })
        lock.release()

        let plan = SessionRemoval.plan(root: root, names: ["single", "\(recording)/\(segments[0].directory)"])
        #expect(plan.refused.isEmpty)
        var said: [String] = []
        try SessionRemoval.remove(plan.targets, reason: "fieldcap sessions rm") { said.append($0) }
        #expect(said.count == 2)
        #expect(!fm.fileExists(atPath: "\(root)/single"))
        #expect(!fm.fileExists(atPath: "\(root)/\(recording)/\(segments[0].directory)"))
        let index = try #require(RecordingIndex.read(directory: "\(root)/\(recording)"))
        #expect(index.segments[0].state == .deleted)
        #expect(index.segments[0].deleted?.reason == "fieldcap sessions rm")
        #expect(RecordingValidator.validate(directory: "\(root)/\(recording)")?.isValid == true)
        #expect(fm.fileExists(atPath: "\(root)/photos/a.jpg"))
        #expect(fm.fileExists(atPath: "\(root)/crashed"))
    }

    @Test("symbolic links in the root are not sessions: not listed, not deleted, their targets untouched")
    func symbolicLinks() throws {
        let (root, recording, segments) = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let fm = FileManager.default
        // A whole session outside the root, and a link to it in the root; a recording whose
        // segment is a link to a copy of itself outside.
        let outside = RecordingFixture.temporary("outside")
        defer { try? fm.removeItem(atPath: outside) }
        try fm.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try fm.copyItem(atPath: "\(root)/single", toPath: "\(outside)/kept")
        try fm.createSymbolicLink(atPath: "\(root)/link", withDestinationPath: "\(outside)/kept")
        let segment = "\(root)/\(recording)/\(segments[2].directory)"
        try fm.moveItem(atPath: segment, toPath: "\(outside)/segment")
        try fm.createSymbolicLink(atPath: segment, withDestinationPath: "\(outside)/segment")

        let names = try SessionCatalog.entries(root: root).map(\.name)
        #expect(!names.contains("link"), "\(names)")
        #expect(names.contains("single") && names.contains(recording))
        #expect(SessionCatalog.isSymbolicLink("\(root)/link") && !SessionCatalog.isSymbolicLink("\(root)/single"))

        let plan = SessionRemoval.plan(root: root, names: ["link", "link/", "\(recording)/\(segments[2].directory)"])
        #expect(plan.targets.isEmpty, "\(plan.targets)")
        #expect(plan.refused.count == 3)
        #expect(
            plan.refused.allSatisfy { $0.contains("is a symbolic link, not a session or recording") }, "\(plan.refused)"
        )
        #expect(
            try fm.contentsOfDirectory(atPath: "\(outside)/kept").sorted()
                == fm.contentsOfDirectory(atPath: "\(root)/single").sorted())
        #expect(fm.fileExists(atPath: "\(outside)/segment/fieldcap.json"))
    }

    @Test("rm by age: old sessions and segments go, unfinished and foreign ones stay")
    func removesByAge() throws {
        let (root, recording, segments) = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        // Everything ended before a time after the recording: all of it is old.
        let later = UInt64(Date().timeIntervalSince1970 * 1e9) + 60_000_000_000
        let all = try SessionRemoval.plan(root: root, endedBefore: later)
        #expect(Set(all.targets.map(\.name)) == [recording, "single"])
        #expect(all.refused.count == 1 && all.refused[0].hasPrefix("crashed: needs `fieldcap recover`"))

        // Before the third segment ended: the first two segments, and the copy of the first.
        let third = try #require(UTCTime.parse(segments[2].endUtc))
        let some = try SessionRemoval.plan(root: root, endedBefore: third - 1)
        #expect(
            Set(some.targets.map(\.name))
                == ["single", "\(recording)/\(segments[0].directory)", "\(recording)/\(segments[1].directory)"])
        // Nothing before the recording.
        let none = try SessionRemoval.plan(root: root, endedBefore: 1_000_000_000)
        #expect(none.targets.isEmpty && none.refused.isEmpty)
    }
}
