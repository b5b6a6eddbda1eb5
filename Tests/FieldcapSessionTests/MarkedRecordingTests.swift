import FieldcapArchive
import FieldcapCore
import FieldcapSegments
import Foundation
import SyncField
import Synchronization
import Testing

@testable import FieldcapSession

/// The issue's always-on recording with marks, at a fifth of its time: 30 s in 1 s segments within
/// a budget of about seven finished segments, four marks, the first of which cannot be kept.
@Suite("Marks on a segmented recording")
struct MarkedRecordingTests {
    /// What one 1 s segment of the streams below takes (64x48 YUYV at 30 fps and a 200 Hz IMU:
    /// 307,200 bytes measured, in 4 KiB blocks).
    static let segmentBytes: UInt64 = 307_200

    @Test("marked windows outlive the unmarked segments; the oldest mark goes when they cannot all fit")
    func marksKeepTheirWindows() throws {
        let root = NSTemporaryDirectory() + "marked-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let reserve = UInt64(
            DiskReserve.bytes(
                streams: 2, cameras: 1, batchBytes: SyncSession.Options().batchBytes,
                frameLogBatchBytes: VideoSessionSink.frameLogBatchBytes))
        // The reserve and the index, then room for about 7.3 finished segments beside the one being
        // written: the marks' 9 segments do not fit, 6 do.
        let budget = reserve + 64 * 1024 + Self.segmentBytes * 83 / 10
        let events = Mutex<[RecordingController.Event]>([])
        // Each time the budget gives up a mark: the segment directories on disk then.
        let onDiskAtGiveUp = Mutex<[Int]>([])
        let directoryBox = Mutex<String?>(nil)
        var settings = RecordingController.Settings(
            hostId: "rig", root: root, duration: TimeSpan(seconds: 30), minFree: ByteSize(bytes: 0),
            segments: SegmentedSessions.Settings(
                lengthNs: 1_000_000_000, budget: StorageBudget(maxBytes: budget), maxStorageLabel: "--max-storage B"))
        settings.onEvent = { event in
            events.withLock { $0.append(event) }
            if case .markGivenUp = event, let directory = directoryBox.withLock({ $0 }) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
                onDiskAtGiveUp.withLock { $0 = names.compactMap { Int($0.prefix(8)) }.sorted() }
            }
        }
        let recording = RecordingController(
            sources: [
                SyntheticCamera(id: "cam0", width: 64, height: 48, rate: 30), SyntheticIMU(id: "imu", rate: 200),
            ],
            settings: settings)
        try recording.start()
        let directory = try #require(recording.directory)
        directoryBox.withLock { $0 = directory }

        // (elapsed seconds, label, before, after)
        let plan: [(Double, String, Double, Double)] = [
            (4.5, "first", 1.4, 1.4),  // segments 4, 5, 6
            (12.5, "second", 0.4, 0.4),  // segment 13
            (19.5, "third", 0.4, 0.4),  // segment 20
            // Segments 26 to 29: the last second before it is still on disk (the budget keeps about
            // two unmarked ones beside the marked five), the rest is to come.
            (26.5, "fourth", 1.3, 2.4),
        ]
        var taken: [Mark] = []
        var warnings: [[String]] = []
        let startNs = try #require(recording.segments?.startNs)
        for (at, label, before, after) in plan {
            // Each at its planned instant of the recording, however late this thread wakes on a
            // busy machine (a mark names its instant, as a GPIO edge's does).
            while recording.elapsed < at + 0.05 { usleep(5_000) }
            var request = MarkRequest(label: label, source: "test", beforeSeconds: before, afterSeconds: after)
            request.atMonotonicRawNs = startNs + UInt64(at * 1e9)
            let result = try recording.mark(request)
            taken.append(result.mark)
            warnings.append(result.warnings)
        }
        // A window the budget cannot hold even alone is refused, and says why.
        do {
            _ = try recording.mark(MarkRequest(label: "wide", source: "test", beforeSeconds: 20, afterSeconds: 0))
            Issue.record("a 20 s window in a budget of about 8 segments was taken")
        } catch {
            #expect(error.kind == .conflict)
            #expect(error.message.contains("more than the budget (--max-storage B) holds"), "\(error.message)")
        }
        var reason: RecordingController.StopReason?
        while reason == nil {
            usleep(20_000)
            reason = recording.checkStop()
        }
        _ = try recording.stop(reason: reason!)

        #expect(taken.map(\.id) == ["m1", "m2", "m3", "m4"])
        // The first three fit with room; the fourth is told at once that they no longer all do.
        #expect(warnings[0].isEmpty && warnings[1].isEmpty && warnings[2].isEmpty)
        #expect(warnings[3].count == 1 && warnings[3][0].contains("oldest marks are given up first"), "\(warnings[3])")
        #expect(warnings[3].first?.contains("m1 \"first\"") == true)

        let index = try #require(RecordingIndex.read(directory: directory))
        let marks = try #require(index.marks)
        #expect(marks.map(\.id) == ["m1", "m2", "m3", "m4"])
        #expect(marks.map { $0.evicted != nil } == [true, false, false, false], "\(marks)")
        let givenUp = events.withLock { $0 }.compactMap { event -> Mark? in
            if case .markGivenUp(let mark, _) = event { return mark }
            return nil
        }
        #expect(givenUp.map(\.id) == ["m1"])

        let segments = index.segments
        func touched(_ segment: RecordingIndex.Segment, by mark: Mark) -> Bool {
            mark.windowTouches(startNs: segment.startMonotonicRawNs, endNs: segment.endMonotonicRawNs)
        }
        // Every live mark's window is on disk, its line in the segment its instant falls in.
        for mark in marks.dropFirst() {
            let held = segments.filter { touched($0, by: mark) }
            #expect(!held.isEmpty)
            for segment in held {
                #expect(segment.state == .complete, "\(mark.id): segment \(segment.number) \(segment.state)")
            }
            let home = try #require(
                segments.first {
                    $0.startMonotonicRawNs <= mark.captureNs && mark.captureNs < $0.endMonotonicRawNs
                })
            let lines = MarkLine.marks(inDirectory: "\(directory)/\(home.directory)")
            #expect(lines.map(\.id) == [mark.id])
        }
        // The first mark's segments go for the budget as room is needed, oldest first, the first
        // said with the mark.
        let firstHeld = segments.filter { touched($0, by: marks[0]) }
        #expect(firstHeld.first?.state == .deleted)
        #expect(
            segments.contains { $0.deleted?.reason.contains("mark m1 \"first\" given up") == true },
            "\(segments.compactMap(\.deleted))")
        // When it went, every segment left on disk was marked, or one of the newest being written:
        // the unmarked ones had gone first, however new.
        let atGiveUp = onDiskAtGiveUp.withLock { $0 }
        let newest = atGiveUp.max() ?? 0
        for number in atGiveUp where number < newest - 1 {
            let segment = try #require(segments.first { $0.number == number })
            #expect(marks.contains { touched(segment, by: $0) }, "unmarked segment \(number) outlived a mark")
        }

        // Each live mark's window extracts as a valid session holding exactly the window.
        for mark in marks.dropFirst() {
            let found = try MarkLookup.find(mark.id, in: directory)
            let out = root + "/clip-\(mark.id)"
            let outcome = try RangeExtractor.extract(
                RangeExtractor.Request(source: found.directory, fromNs: found.fromNs, toNs: found.toNs, out: out))
            #expect(outcome.report.isValid, "\(mark.id): \(outcome.report.problems)")
            for (id, count) in outcome.records {
                let expected = try Self.records(
                    of: id, in: directory, segments: segments, fromNs: mark.windowStartNs, toNs: mark.windowEndNs)
                // A record within microseconds of an edge may fall either side of the sync points'
                // own rounding.
                #expect(abs(count - expected) <= 1, "\(mark.id) \(id): \(count) extracted, \(expected) in the window")
                #expect(count > 0)
            }
        }
        // By label too, from the root; an unknown key names the marks there are.
        #expect(try MarkLookup.find("third", in: root).mark.id == "m3")
        #expect(throws: MarkLookup.Failure.self) { try MarkLookup.find("first", in: directory) }
        do {
            _ = try MarkLookup.find("nothing", in: directory)
        } catch {
            #expect(error.message.contains("m4 fourth"), "\(error.message)")
        }
    }

    /// Records of stream `id` in the present segments whose capture_ns is in [fromNs, toNs).
    static func records(
        of id: String, in directory: String, segments: [RecordingIndex.Segment], fromNs: UInt64, toNs: UInt64
    ) throws -> Int {
        var count = 0
        for segment in segments where segment.state != .deleted {
            let path = "\(directory)/\(segment.directory)/\(SessionLayout.timestampsName(id))"
            let text = try String(contentsOfFile: path, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let ns = try #require((object["capture_ns"] as? NSNumber)?.uint64Value)
                if ns >= fromNs && ns < toNs { count += 1 }
            }
        }
        return count
    }
}
