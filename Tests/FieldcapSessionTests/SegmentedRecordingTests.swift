import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import Logging
import SyncField
import Synchronization
import Testing

/// Recording in segments with synthetic sources: what `fieldcap record --segment` does.
@Suite("Segmented recording")
struct SegmentedRecordingTests {
    /// Bytes the files under `path` take on disk.
    static func bytesOnDisk(_ path: String) -> UInt64 {
        guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
        var total: UInt64 = 0
        for case let name as String in walker {
            var info = stat()
            if lstat("\(path)/\(name)", &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG {
                total += UInt64(info.st_blocks) * 512
            }
        }
        return total
    }

    /// A recording's length, its segments' and its budget, and how late a cut may come.
    struct Run: Sendable, CustomTestStringConvertible {
        var seconds: Double
        var segmentSeconds: Double
        var budget: UInt64
        var label: String
        /// The synthetic sources stamp on schedule: a cut comes within a frame of its boundary,
        /// unless the host stalls the rotation thread (two minutes on a shared CI host may).
        var latestCut: Double
        var testDescription: String { "\(seconds) s in \(segmentSeconds) s segments" }
    }

    @Test(
        "2 cameras and an IMU in segments within a budget: every segment validates, nothing lost or doubled",
        arguments: [
            // About 0.5 MB a segment, beside the disk reserve (about 1.7 MB while recording):
            // two finished ones and the one being written.
            Run(seconds: 8, segmentSeconds: 1, budget: 3_500_000, label: "--max-storage 3.3M", latestCut: 0.1),
            // The run, shortened: ten rotations in 4 s segments (about 1.9 MB each), a
            // budget of the reserve and three and a bit (two minutes in 5 s segments once: the
            // suite's longest test, for nothing ten rotations do not show).
            Run(seconds: 40, segmentSeconds: 4, budget: 9_000_000, label: "--max-storage 8.6M", latestCut: 0.5),
        ])
    func segmentsWithinABudget(run: Run) throws {
        let root = NSTemporaryDirectory() + "segmented-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let budget = run.budget
        let deletions = Mutex<[String]>([])
        let recording = RecordingController(
            sources: [
                SyntheticCamera(id: "cam0", width: 64, height: 48, rate: 30),
                SyntheticCamera(id: "cam1", width: 64, height: 48, rate: 30), SyntheticIMU(id: "imu", rate: 200),
            ],
            settings: .init(
                hostId: "rig", root: root, duration: TimeSpan(seconds: run.seconds), minFree: ByteSize(bytes: 0),
                segments: SegmentedSessions.Settings(
                    lengthNs: UInt64(run.segmentSeconds * 1e9), budget: StorageBudget(maxBytes: budget),
                    maxStorageLabel: run.label
                )),
            logger: .lines(label: "test") { message in deletions.withLock { $0.append(message) } })
        try recording.start()
        let directory = try #require(recording.directory)
        var largestSeen: UInt64 = 0
        var reason: RecordingController.StopReason?
        while reason == nil {
            usleep(20_000)
            largestSeen = max(largestSeen, Self.bytesOnDisk(directory))
            reason = recording.checkStop()
        }
        let outcome = try recording.stop(reason: reason!)
        #expect(outcome.writeFailure == nil)

        let index = try #require(RecordingIndex.read(directory: directory))
        #expect(index.state == "complete")
        #expect(index.stopReason == "duration")
        let segments = index.segments
        #expect(segments.count >= Int(run.seconds / run.segmentSeconds) - 1)
        #expect(segments.map(\.number) == Array(1...segments.count))
        #expect(segments.map(\.directory) == segments.map(\.directory).sorted())
        // The budget deleted the oldest, logged each deletion, and kept the newest.
        #expect(segments.first?.state == .deleted)
        #expect(segments.last?.state == .complete)
        #expect(deletions.withLock { $0.count } == segments.filter { $0.state == .deleted }.count)
        #expect(segments.filter { $0.state == .deleted }.allSatisfy { $0.deleted?.reason == run.label })
        // Never more than one segment over the budget.
        let largestSegment = segments.compactMap(\.bytes).max() ?? 0
        #expect(largestSeen <= budget + largestSegment, "\(largestSeen) on disk, budget \(budget) + \(largestSegment)")

        for segment in segments where segment.state != .deleted {
            let path = "\(directory)/\(segment.directory)"
            let report = SessionValidator.validateWithVideos(directory: path)
            #expect(report.isValid, "\(segment.directory): \(report.problems)")
            let sidecar = try #require(Sidecar.Contents(layout: SessionLayout(directory: path)))
            let expected = segment.number == segments.count ? "duration" : "segment"
            #expect(sidecar.document["stop_reason"]?.stringValue == expected)
        }
        for segment in segments where segment.state == .deleted {
            #expect(!FileManager.default.fileExists(atPath: "\(directory)/\(segment.directory)"))
        }
        // Every record in exactly one segment: the segments' counts add up to what the recorder
        // wrote, and each stream's sequence numbers run on from one segment into the next.
        for stream in outcome.summary {
            let counts = segments.compactMap { $0.streams?[stream.id] }
            #expect(counts.count == segments.count)
            #expect(counts.reduce(0) { $0 + $1.records } == stream.written, "\(stream.id)")
            let withRecords = counts.filter { $0.records > 0 }
            for (previous, next) in zip(withRecords, withRecords.dropFirst()) {
                #expect(next.firstSequence! > previous.lastSequence!)
                #expect(next.firstCaptureNs! >= previous.lastCaptureNs!)
            }
            let first = try #require(withRecords.first?.firstSequence),
                last = try #require(withRecords.last?.lastSequence)
            #expect(withRecords.reduce(0) { $0 + $1.records + $1.missing } == Int(last - first + 1))
        }
        // Each cut close to its boundary.
        for segment in segments.dropFirst() {
            for (id, counts) in segment.streams ?? [:] {
                if let after = counts.firstAfterStartSeconds {
                    #expect(
                        after >= 0 && after < run.latestCut,
                        "segment \(segment.number) \(id): first record \(after) s in")
                }
            }
        }
    }
}
