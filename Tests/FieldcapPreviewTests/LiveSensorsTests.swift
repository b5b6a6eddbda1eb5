import FieldcapCore
import Foundation
import SyncField
import Testing

@testable import FieldcapPreview

@Suite("Live sensor samples", .timeLimit(.minutes(1)))
struct LiveSensorsTests {
    static let imu = StreamDescriptor(
        id: "imu", kind: .sensor, channels: ["accel_x", "gyro_z"], nominalRate: 1000, device: "synthetic")

    static func sample(_ sequence: UInt64) -> CaptureRecord {
        var record = CaptureRecord()
        record.sequence = sequence
        record.captureNs = 5_000 + sequence
        record.valueCount = 2
        record.values[0] = Double(sequence) / 8
        record.values[1] = -Double(sequence)
        return record
    }

    @Test(
        "an unwatched tap copies nothing; a watched one hands every sample on in order, and counts what a full ring lost"
    )
    func tap() {
        let tap = SampleTap(streamId: "imu", channels: ["x"], capacity: 4)
        tap.offer(Self.sample(1))
        #expect(tap.drain { _ in } == 0)
        tap.watched = true
        for sequence in 2...7 { tap.offer(Self.sample(UInt64(sequence))) }
        var taken: [UInt64] = []
        tap.drain { records in taken += records.map(\.sequence) }
        #expect(taken == [2, 3, 4, 5])
        #expect(tap.dropped == 2)
    }

    @Test("a viewer gets each sample with the stream's values once watching; other streams and cameras are not served")
    func viewer() async throws {
        let camera = StreamDescriptor(id: "cam", kind: .video, channels: [], nominalRate: 30, device: "synthetic")
        let live = LiveSensors(sensors: [camera, Self.imu])
        defer { live.close() }
        #expect(live.streams.map(\.id) == ["imu"])
        #expect(live.samples(of: "cam") == nil)
        let changes = Counts()
        live.onViewersChanged { changes.add($0) }
        let tap = try #require(live.taps["imu"])
        tap.offer(Self.sample(0))  // before anyone watches: never seen
        let stream = try #require(live.samples(of: "imu"))
        // The hub turns the tap on when it wakes for the viewer.
        for _ in 0..<200 where !tap.watched { try await Task.sleep(for: .milliseconds(5)) }
        #expect(tap.watched)
        for sequence in 1...300 { tap.offer(Self.sample(UInt64(sequence))) }
        var seen: [LiveSample] = []
        for await batch in stream {
            seen += batch
            if seen.count >= 300 { break }
        }
        #expect(seen.map(\.sequence) == Array(1...300))
        #expect(seen[6] == LiveSample(captureNs: 5_007, sequence: 7, values: [7.0 / 8, -7]))
        #expect(changes.values.first == 1)
    }

    @Test("a viewer that takes nothing holds at most its newest batches, and the others get every sample")
    func slowViewer() async throws {
        let live = LiveSensors(sensors: [Self.imu], periodMs: 1)
        defer { live.close() }
        let tap = try #require(live.taps["imu"])
        let slow = try #require(live.samples(of: "imu"))
        let fast = try #require(live.samples(of: "imu"))
        for _ in 0..<200 where !tap.watched { try await Task.sleep(for: .milliseconds(5)) }
        let batches = LiveSensors.viewerBatches * 2
        var fastSeen = 0
        var iterator = fast.makeAsyncIterator()
        // One batch at a time: each offered batch is taken by the hub before the next.
        for batch in 0..<batches {
            for index in 0..<4 { tap.offer(Self.sample(UInt64(batch * 4 + index))) }
            while fastSeen < (batch + 1) * 4, let got = await iterator.next() { fastSeen += got.count }
        }
        #expect(fastSeen == batches * 4)
        live.close()
        var slowBatches = 0
        var first: UInt64?
        for await batch in slow {
            slowBatches += 1
            first = first ?? batch.first?.sequence
        }
        #expect(slowBatches <= LiveSensors.viewerBatches)
        #expect(
            first.map { $0 >= UInt64(batches * 4 - LiveSensors.viewerBatches * 4) } == true, "the oldest went first")
    }
}

final class Counts: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int] = []
    func add(_ value: Int) { lock.withLock { list.append(value) } }
    var values: [Int] { lock.withLock { list } }
}
