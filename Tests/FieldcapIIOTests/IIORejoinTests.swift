import FieldcapCore
import Glibc
import SyncField
import Synchronization
import Testing

@testable import FieldcapIIO

/// An IMU whose device goes away mid-stream and comes back, played through the buffer seam and
/// the rejoin decisions `IIOIMU.run` makes (`RejoinLoop`): each scripted buffer is the device
/// between two losses. Letting libiio's buffer go, waiting through udev and setting the device
/// up again as it was (channels, layout, rate, trigger, clock) have no seam: the kernel rig's
/// `fieldcap_iio_rejoin` removes and re-adds the IIO dummy for those.
@Suite("An IIO device that comes back, through the buffer seam")
struct IIORejoinTests {
    final class Asked: Sendable { let count = Atomic<Int>(0) }

    /// A policy whose device is back as `iio:device1` at once, counting how often it was waited
    /// for; `stopWhileAway`: the stop comes instead.
    static func policy(maxReturns: Int = 10, stopWhileAway: Bool = false) -> (RejoinPolicy, Asked) {
        let asked = Asked()
        let policy = RejoinPolicy(maxReturns: maxReturns, watching: "a test's script") { stop, note in
            asked.count.add(1, ordering: .relaxed)
            note("looked once")
            if stopWhileAway {
                stop.request()
                return nil
            }
            return "iio:device1"
        }
        return (policy, asked)
    }

    struct Run {
        var records: [CaptureRecord]
        var error: DeviceError?
        var loop: IIOReadLoop
        var gaps: DropCounter
        var returns: Int
        var ringDrops: Int
    }

    /// Streams `buffers` one after another as `IIOIMU.run` streams its device: a loss (ENODEV)
    /// goes through the rejoin decisions, and each return hands the next buffer.
    private func run(
        _ buffers: [ScriptedIIOBuffer], stop: StopSignal, policy: RejoinPolicy?, presence: StreamPresence?,
        timestamps: Bool = true
    ) -> Run {
        var loop = IIOReadLoop(
            label: "imu0", decoders: ScriptedIIOBuffer.decoders,
            timestampOffset: timestamps ? ScriptedIIOBuffer.timestampOffset : nil,
            mappedClock: nil, periodNs: 1_000_000, stallTimeoutNs: 2_000_000_000, samplesPerRead: 64)
        let ring = SPSCRing<CaptureRecord>(minimumCapacity: 1024)
        let gaps = DropCounter()
        var rejoining = RejoinLoop(policy: policy, presence: presence)
        var current = 0
        var failure: DeviceError?
        do {
            try rejoining.run(
                stream: { try loop.run(buffers[current], into: ring, stop: stop, timelineGaps: gaps) },
                takeUpAgain: { policy, presence in
                    guard let node = policy.waitForDevice(stop, { presence.note($0) }) else { return false }
                    current += 1
                    presence.returned(atNs: MonotonicClock.now(), as: node)
                    return true
                })
        } catch {
            failure = error as? DeviceError
        }
        var records: [CaptureRecord] = []
        while let record = ring.pop() { records.append(record) }
        return Run(
            records: records, error: failure, loop: loop, gaps: gaps, returns: rejoining.returns,
            ringDrops: ring.drops.count)
    }

    /// `count` scans a millisecond apart from `start`, numbered from `first`.
    private func scans(_ count: Int, from first: Int = 0, start: Int64) -> ScriptedIIOBuffer.Read {
        .scans(
            (first..<first + count).map { index in
                ([Int16(index), 0, 0], start + Int64(index) * 1_000_000)
            })
    }

    private var later: Int64 { Int64(MonotonicClock.now()) + 1_000_000_000 }

    @Test("a device that comes back streams on: sample numbers run on, the time away is neither a gap nor a drop")
    func comesBack() throws {
        let stop = StopSignal()
        let (policy, asked) = Self.policy()
        let presence = StreamPresence()
        let start = later
        // The device's own clock goes on while it is away: its samples after the return are
        // two seconds, two thousand periods, after those before.
        let buffers = [
            ScriptedIIOBuffer(reads: [scans(5, start: start), .failure(ENODEV)], stop: stop),
            ScriptedIIOBuffer(reads: [scans(3, start: start + 2_000_000_000)], stop: stop),
        ]
        let run = run(buffers, stop: stop, policy: policy, presence: presence)
        #expect(run.error == nil)
        #expect(run.records.map(\.sequence) == Array(0...7))
        // The device's own numbering restarts: (raw + offset 1) × scale 0.5.
        #expect(run.records.map { $0.values[0] } == [0, 1, 2, 3, 4, 0, 1, 2].map { (Double($0) + 1) * 0.5 })
        #expect(run.gaps.count == 0 && run.loop.emitter.gapEvents == 0, "the time away is not a timeline gap")
        #expect(run.ringDrops == 0)
        #expect(run.returns == 1 && asked.count.load(ordering: .relaxed) == 1)
        #expect(run.loop.samplesRead == 8 && run.loop.streams == 2)
        let absences = presence.absences
        try #require(absences.count == 1)
        #expect(absences[0].returnedNs != nil && absences[0].returnedAs == "iio:device1")
        #expect(absences[0].reason.contains("read samples") && absences[0].reason.contains("errno 19"))
        #expect(absences[0].notes == ["looked once"])
        #expect(!presence.isAway)
        #expect(zip(run.records, run.records.dropFirst()).allSatisfy { $0.captureNs < $1.captureNs })
    }

    @Test("a gap after the return is still counted, numbered after the samples before the loss")
    func gapAfterReturn() {
        let stop = StopSignal()
        let (policy, _) = Self.policy()
        let start = later
        let after = start + 2_000_000_000
        let stamps = [0, 1, 5, 6].map { (values: [Int16(0), 0, 0], timestampNs: after + Int64($0) * 1_000_000) }
        let buffers = [
            ScriptedIIOBuffer(reads: [scans(3, start: start), .failure(ENODEV)], stop: stop),
            ScriptedIIOBuffer(reads: [.scans(stamps)], stop: stop),
        ]
        let run = run(buffers, stop: stop, policy: policy, presence: StreamPresence())
        #expect(run.error == nil)
        // Samples 2 to 4 after the return never came: numbered just before the one that closes
        // the gap, after the three before the loss.
        #expect(run.records.map(\.sequence) == [0, 1, 2, 3, 4, 5, 9])
        #expect(run.gaps.count == 3 && run.gaps.droppedRuns == [6...8])
    }

    @Test("a device that went more often than rejoin allows ends its stream, saying so")
    func givesUp() throws {
        let stop = StopSignal()
        let (policy, asked) = Self.policy(maxReturns: 2)
        let presence = StreamPresence()
        let start = later
        let buffers = (0..<3).map { index in
            ScriptedIIOBuffer(
                reads: [scans(2, from: 2 * index, start: start), .failure(ENODEV)], stop: stop)
        }
        let run = run(buffers, stop: stop, policy: policy, presence: presence)
        let error = try #require(run.error)
        #expect(error.code == .gone && error.operation == "read samples")
        #expect(error.hint.contains("it had come back 2 times within a minute, the most rejoin= allows"))
        #expect(error.description.contains("errno 19"))
        #expect(run.returns == 2 && asked.count.load(ordering: .relaxed) == 2)
        #expect(run.records.map(\.sequence) == Array(0...5))
        // The third loss is the stream's end, not an absence.
        #expect(presence.absences.count == 2 && presence.absences.allSatisfy { $0.returnedNs != nil })
    }

    @Test("a stop while the device is away ends the stream cleanly, the absence left open")
    func stopWhileAway() throws {
        let stop = StopSignal()
        let (policy, _) = Self.policy(stopWhileAway: true)
        let presence = StreamPresence()
        let buffers = [ScriptedIIOBuffer(reads: [scans(4, start: later), .failure(ENODEV)], stop: stop)]
        let run = run(buffers, stop: stop, policy: policy, presence: presence)
        #expect(run.error == nil)
        #expect(run.records.count == 4 && run.returns == 0)
        let absences = presence.absences
        try #require(absences.count == 1)
        #expect(absences[0].returnedNs == nil && absences[0].refusal == nil)
        #expect(presence.isAway, "the recorder reads a stream still away at the stop as ended early")
    }

    @Test("a hang-up of a device without timestamps is a loss too, taken up again")
    func hangUpComesBack() {
        let stop = StopSignal()
        let (policy, _) = Self.policy()
        let buffers = [
            ScriptedIIOBuffer(reads: [scans(2, start: 0)], waits: [.ready, .hangUp], stop: stop),
            ScriptedIIOBuffer(reads: [scans(2, start: 0)], stop: stop),
        ]
        let run = run(buffers, stop: stop, policy: policy, presence: StreamPresence(), timestamps: false)
        #expect(run.error == nil && run.returns == 1)
        #expect(run.records.map(\.sequence) == [0, 1, 2, 3] && run.gaps.count == 0)
    }

    @Test("without rejoin, and for failures that are not a loss, the stream ends as before")
    func notTakenUp() {
        let stop = StopSignal()
        let gone = run(
            [ScriptedIIOBuffer(reads: [scans(2, start: later), .failure(ENODEV)], stop: stop)], stop: stop,
            policy: nil, presence: nil)
        #expect(gone.error?.code == .gone && gone.error?.hint == DeviceError.goneHint)
        let (policy, asked) = Self.policy()
        let presence = StreamPresence()
        let other = StopSignal()
        let failed = run(
            [ScriptedIIOBuffer(reads: [scans(2, start: later), .failure(EIO)], stop: other)], stop: other,
            policy: policy, presence: presence)
        #expect(failed.error?.code == .other && failed.error?.errno == EIO)
        #expect(asked.count.load(ordering: .relaxed) == 0 && presence.absences.isEmpty)
    }
}
