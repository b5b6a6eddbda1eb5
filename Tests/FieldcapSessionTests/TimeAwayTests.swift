import FieldcapArchive
import FieldcapCore
import FieldcapSegments
import FieldcapSession
import Foundation
import SyncField
import Testing

/// A device away for 1.5 s of a segmented recording in 1 s segments: each segment's sidecar and
/// index entry tell the time away for their own part of it, the parts add up to the whole, and an
/// extract over the range carries it, so every hole in the records is explained.
@Suite("Time away in segments and extracts")
struct TimeAwayTests {
    /// A 100 Hz sensor whose device goes 0.8 s in and comes back 1.5 s later, its sequence
    /// running on, as a rejoining source's does.
    final class AwhileAway: CaptureSource, @unchecked Sendable {
        let descriptor = StreamDescriptor(id: "imu", kind: .sensor, channels: ["v"], nominalRate: 100, device: "x")
        let presence: StreamPresence? = StreamPresence()
        func run(into ring: SPSCRing<CaptureRecord>, stop: StopSignal) throws {
            let started = MonotonicClock.now()
            var record = CaptureRecord()
            record.valueCount = 1
            var sequence: UInt64 = 0
            var away = false
            var wasAway = false
            while !stop.wait(milliseconds: 10) {
                let elapsed = MonotonicClock.now() - started
                if !wasAway && elapsed > 800_000_000 {
                    presence?.left(atNs: MonotonicClock.now(), reason: "x: gone")
                    (away, wasAway) = (true, true)
                }
                if away && elapsed > 2_300_000_000 {
                    presence?.returned(atNs: MonotonicClock.now(), as: "y")
                    away = false
                }
                guard !away else { continue }
                record.sequence = sequence
                record.captureNs = MonotonicClock.now()
                record.dequeueNs = record.captureNs
                record.uncertaintyNs = 1_000
                record.values[0] = Double(sequence)
                _ = ring.push(record, sequence: sequence)
                sequence += 1
            }
        }
    }

    @Test("each segment tells its part of the time away; the parts add up; an extract carries it and validates")
    func segmentsAndExtract() async throws {
        let root = NSTemporaryDirectory() + "away-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let source = AwhileAway()
        let recording = RecordingController(
            sources: [source],
            settings: .init(
                hostId: "rig", root: root, duration: TimeSpan(seconds: 4), minFree: ByteSize(bytes: 0),
                segments: SegmentedSessions.Settings(lengthNs: 1_000_000_000, budget: StorageBudget())))
        try recording.start()
        let directory = try #require(recording.directory)
        var reason: RecordingController.StopReason?
        while reason == nil {
            try await Task.sleep(for: .milliseconds(20))
            reason = recording.checkStop()
        }
        _ = try recording.stop(reason: reason!)
        let absence = try #require(source.presence?.absences.first)
        let returned = try #require(absence.returnedNs)
        let whole = Int((Double(returned - absence.leftNs) / 1e7).rounded())
        let index = try #require(RecordingIndex.read(directory: directory))
        var fromIndex = 0
        var fromSidecars = 0
        for segment in index.segments {
            for away in segment.streams?["imu"]?.away ?? [] {
                #expect(away.leftMonotonicRawNs == absence.leftNs)
                fromIndex += away.recordsAtNominalRate
            }
            let sidecar = try #require(
                JSONValue.parse(
                    try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(segment.directory)/fieldcap.json"))))
            let entry = try #require(sidecar["streams"]?.arrayValue?.first)
            for away in entry["away"]?.arrayValue ?? [] {
                fromSidecars += away["records_at_nominal_rate"]?.intValue ?? 0
            }
        }
        // A segment rounds its part to a record.
        #expect(abs(fromIndex - whole) <= 2, "index \(fromIndex), whole \(whole)")
        #expect(abs(fromSidecars - whole) <= 2, "sidecars \(fromSidecars), whole \(whole)")
        #expect(index.segments.count >= 4)

        let clip = "\(root)/clip"
        let outcome = try RangeExtractor.extract(.init(source: directory, fromNs: 0, toNs: UInt64.max / 2, out: clip))
        #expect(outcome.report.isValid, "\(outcome.report.problems)")
        let sidecar = try #require(
            JSONValue.parse(try Data(contentsOf: URL(fileURLWithPath: "\(clip)/fieldcap.json"))))
        let away = try #require(sidecar["streams"]?.arrayValue?.first?["away"]?.arrayValue)
        try #require(away.count == 1)
        #expect(away[0]["returned_at"]?["monotonic_raw_ns"]?.uint64Value == returned)
        let extracted = away[0]["records_at_nominal_rate"]?.intValue ?? -1
        #expect(abs(extracted - whole) <= 1, "extract \(extracted), whole \(whole)")
    }
}
