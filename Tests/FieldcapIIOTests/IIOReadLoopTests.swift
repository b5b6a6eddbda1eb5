import FieldcapCore
import Glibc
import SyncField
import Testing

@testable import FieldcapIIO

/// A device played through the buffer seam: each `refill` hands out the next read of the script,
/// each `poll` the next wait. When both run out, the stop is requested, as a recorder stopping.
final class ScriptedIIOBuffer: IIOBufferCalls {
    enum Read {
        /// Scans of three 16-bit values and a timestamp (nil: the device has no timestamp channel).
        case scans([(values: [Int16], timestampNs: Int64)])
        case again
        case failure(Int32)
    }

    enum Wait {
        case ready
        /// The recorder stops during this wait (the samples still to read are in the kernel's buffer).
        case stop
        case interrupted
        case hangUp
        case quiet
        case failure(Int32)
    }

    /// A scan: three little-endian Int16 at 0, 2, 4, then the timestamp at 8.
    static let step = 16
    static let timestampOffset = 8
    static let decoders = (0..<3).map {
        IIOChannelDecoder(
            format: IIOScanFormat(isBigEndian: false, isSigned: true, bits: 16, storageBits: 16, shift: 0),
            byteOffset: 2 * $0, scale: 0.5, offset: 1, factor: 1)
    }

    var reads: [Read]
    var waits: [Wait]
    /// Keep answering "nothing" (quiet waits, EAGAIN reads) instead of stopping at the end.
    let endless: Bool
    let stop: StopSignal
    private(set) var polls = 0
    private(set) var refills = 0
    private let storage = UnsafeMutableRawPointer.allocate(byteCount: 64 * 1024, alignment: 8)
    private var scanCount = 0

    init(reads: [Read], waits: [Wait] = [], endless: Bool = false, stop: StopSignal) {
        self.reads = reads
        self.waits = waits
        self.endless = endless
        self.stop = stop
    }

    deinit { storage.deallocate() }

    var pollDescriptor: Int32 { 1_000 }

    func refill() -> Int {
        refills += 1
        guard !reads.isEmpty else {
            if !endless { stop.request() }
            return -Int(EAGAIN)
        }
        switch reads.removeFirst() {
        case .again: return -Int(EAGAIN)
        case .failure(let code): return -Int(code)
        case .scans(let scans):
            for (index, scan) in scans.enumerated() {
                let base = storage + index * Self.step
                for (slot, value) in scan.values.enumerated() {
                    base.storeBytes(of: value.littleEndian, toByteOffset: 2 * slot, as: Int16.self)
                }
                base.storeBytes(of: scan.timestampNs, toByteOffset: Self.timestampOffset, as: Int64.self)
            }
            scanCount = scans.count
            return scans.count * Self.step
        }
    }

    func scans() -> (first: UnsafeRawPointer, count: Int, step: Int) {
        (UnsafeRawPointer(storage), scanCount, Self.step)
    }

    func poll(_ descriptors: UnsafeMutablePointer<pollfd>, count: Int, timeoutMs: Int32) -> Int32 {
        polls += 1
        if reads.isEmpty && waits.isEmpty && !endless {
            stop.request()
            descriptors[0].revents = Int16(POLLIN)
            return 1
        }
        switch waits.isEmpty ? (endless && reads.isEmpty ? .quiet : .ready) : waits.removeFirst() {
        case .ready:
            // Waiting on the stop signal alone (samples with timestamps): the wait times out.
            guard count == 2 else { return 0 }
            descriptors[1].revents = Int16(POLLIN)
            return 1
        case .stop:
            stop.request()
            descriptors[0].revents = Int16(POLLIN)
            return 1
        case .interrupted:
            errno = EINTR
            return -1
        case .hangUp:
            descriptors[1].revents = Int16(POLLHUP)
            return 1
        case .quiet: return 0
        case .failure(let code):
            errno = code
            return -1
        }
    }
}

@Suite("The IIO capture loop, through the buffer seam")
struct IIOReadLoopTests {
    static let periodNs = 1_000_000.0

    /// Runs the loop over `buffer`; returns what reached the ring, the error it ended with, the
    /// loop and the timeline's gaps.
    private func run(
        _ buffer: ScriptedIIOBuffer, timestamps: Bool = true, stallTimeoutNs: UInt64 = 2_000_000_000,
        samplesPerRead: Int = 64
    ) -> (records: [CaptureRecord], error: DeviceError?, loop: IIOReadLoop, gaps: DropCounter) {
        var loop = IIOReadLoop(
            label: "iio:device0", decoders: ScriptedIIOBuffer.decoders,
            timestampOffset: timestamps ? ScriptedIIOBuffer.timestampOffset : nil, mappedClock: nil,
            periodNs: Self.periodNs, stallTimeoutNs: stallTimeoutNs, samplesPerRead: samplesPerRead)
        let ring = SPSCRing<CaptureRecord>(minimumCapacity: 1024)
        let gaps = DropCounter()
        var failure: DeviceError?
        do { try loop.run(buffer, into: ring, stop: buffer.stop, timelineGaps: gaps) } catch {
            failure = error as? DeviceError
        }
        var records: [CaptureRecord] = []
        while let record = ring.pop() { records.append(record) }
        return (records, failure, loop, gaps)
    }

    /// `count` scans a period apart from `start` (a time after the loop starts), values i, 2i, 3i.
    private func scans(_ count: Int, from first: Int = 0, start: Int64) -> ScriptedIIOBuffer.Read {
        var made: [(values: [Int16], timestampNs: Int64)] = []
        for index in first..<first + count {
            let values: [Int16] = [Int16(index), Int16(2 * index), Int16(3 * index)]
            made.append((values, start + Int64(index) * 1_000_000))
        }
        return .scans(made)
    }

    private var later: Int64 { Int64(MonotonicClock.now()) + 1_000_000_000 }

    @Test("each sample takes its timestamp channel's time and its values decoded in SI units, in order")
    func stampedAndDecoded() {
        let start = later
        let buffer = ScriptedIIOBuffer(
            reads: [scans(3, start: start), scans(3, from: 3, start: start)], stop: StopSignal())
        let result = run(buffer)
        #expect(result.error == nil)
        #expect(result.records.map(\.sequence) == Array(0...5))
        #expect(result.records.map(\.captureNs) == (0...5).map { UInt64(start) + UInt64($0) * 1_000_000 })
        #expect(result.records.allSatisfy { $0.uncertaintyNs == 1_000 && $0.valueCount == 3 })
        // (raw + offset 1) × scale 0.5
        #expect(result.records[4].values[0] == 2.5 && result.records[4].values[1] == 4.5)
        #expect(result.records[4].values[2] == 6.5)
        #expect(result.loop.samplesRead == 6 && result.loop.samplesBeforeStart == 0)
    }

    @Test("at the stop, what the kernel's buffer holds is read before the loop ends: nothing made before it is lost")
    func readsWhatIsLeftAtTheStop() {
        let start = later
        // The stop comes while three samples wait in the kernel's buffer (made since the last read).
        let buffer = ScriptedIIOBuffer(
            reads: [scans(2, start: start), scans(3, from: 2, start: start)], waits: [.ready, .stop],
            stop: StopSignal())
        let result = run(buffer)
        #expect(result.error == nil)
        #expect(result.records.map(\.sequence) == Array(0...4))
        // One read past them found nothing (EAGAIN): the stop waited for nothing more.
        #expect(buffer.refills == 3)
    }

    @Test("samples stamped before the recording started are left out, and counted")
    func beforeStartLeftOut() {
        let earlier = Int64(MonotonicClock.now()) - 1_000_000_000
        let start = later
        let buffer = ScriptedIIOBuffer(reads: [scans(4, start: earlier), scans(2, start: start)], stop: StopSignal())
        let result = run(buffer)
        #expect(result.records.count == 2)
        #expect(result.loop.samplesBeforeStart == 4 && result.loop.samplesRead == 6)
    }

    @Test("EAGAIN reads again, an interrupted wait waits again: nothing is lost")
    func againAndInterrupted() {
        let start = later
        let buffer = ScriptedIIOBuffer(
            reads: [.again, scans(2, start: start), .again, scans(2, from: 2, start: start)],
            waits: [.interrupted, .ready, .interrupted, .ready, .ready, .ready], stop: StopSignal())
        let result = run(buffer)
        #expect(result.error == nil)
        #expect(result.records.map(\.sequence) == Array(0...3))
        #expect(result.gaps.count == 0)
    }

    @Test("a read that says ENODEV ends the stream as the device gone, keeping what came before")
    func readGone() {
        let buffer = ScriptedIIOBuffer(reads: [scans(3, start: later), .failure(ENODEV)], stop: StopSignal())
        let result = run(buffer)
        #expect(result.error?.code == .gone)
        #expect(result.error?.operation == "read samples")
        #expect(result.records.count == 3)
    }

    @Test("another read error ends the stream with its errno")
    func readFails() {
        let buffer = ScriptedIIOBuffer(reads: [.failure(EIO)], stop: StopSignal())
        let result = run(buffer)
        #expect(result.error?.code == .other && result.error?.errno == EIO)
    }

    @Test("without a timestamp channel the device is waited on: a hang-up is the device gone")
    func hangUpGone() {
        let buffer = ScriptedIIOBuffer(reads: [scans(4, start: 0)], waits: [.ready, .hangUp], stop: StopSignal())
        let result = run(buffer, timestamps: false)
        #expect(result.error?.code == .gone && result.error?.operation == "poll")
        // Times extrapolated back from the read, a period apart, the last at the read.
        #expect(result.records.count == 4)
        let steps = zip(result.records, result.records.dropFirst()).map { $1.captureNs - $0.captureNs }
        #expect(steps == [1_000_000, 1_000_000, 1_000_000])
        #expect(result.records.last!.captureNs == result.records.last!.dequeueNs)
        #expect(result.records.allSatisfy { $0.deviceNs == 0 && $0.uncertaintyNs == 1_000_000 })
    }

    @Test("without a timestamp channel, a wait that says nothing for the device reads nothing")
    func deviceNotReady() {
        let buffer = ScriptedIIOBuffer(
            reads: [scans(2, start: 0)], waits: [.quiet, .quiet, .ready], stop: StopSignal())
        let result = run(buffer, timestamps: false)
        #expect(result.records.count == 2)
        // Two quiet waits read nothing; the third reads the samples; the fourth finds the stop, and
        // a last read (what the buffer holds at the stop) finds nothing.
        #expect(buffer.refills == 2 && buffer.polls == 4)
    }

    @Test("a wait that fails ends the stream with its errno")
    func waitFails() {
        let buffer = ScriptedIIOBuffer(reads: [scans(1, start: later)], waits: [.failure(EBADF)], stop: StopSignal())
        let result = run(buffer)
        #expect(result.error?.operation == "poll" && result.error?.errno == EBADF)
    }

    @Test("no sample within the stall timeout ends the stream as stalled")
    func stall() {
        let buffer = ScriptedIIOBuffer(reads: [], endless: true, stop: StopSignal())
        let result = run(buffer, stallTimeoutNs: 50_000_000)
        #expect(result.error?.code == .stalled)
    }

    @Test("a full read is followed by another at once, without a wait")
    func fullReadReadsAgain() {
        let start = later
        let buffer = ScriptedIIOBuffer(
            reads: [scans(3, start: start), scans(2, from: 3, start: start)], stop: StopSignal())
        let result = run(buffer, samplesPerRead: 3)
        #expect(result.records.count == 5)
        // One wait before the first read, none before the second, one that finds the end.
        #expect(buffer.polls == 2)
    }

    @Test("a sample missing from the timeline is counted, and the sequence skips it")
    func timelineGap() {
        let start = later
        // Samples 3 to 6 never came (the emitter's own tests cover late and bunched ticks).
        let stamps = [0, 1, 2, 7, 8, 9].map { (values: [Int16(0), 0, 0], timestampNs: start + Int64($0) * 1_000_000) }
        let buffer = ScriptedIIOBuffer(reads: [.scans(stamps)], stop: StopSignal())
        let result = run(buffer)
        // The emitter numbers the missing ones just before the sample that closes the gap.
        #expect(result.records.map(\.sequence) == [0, 1, 2, 3, 8, 9])
        #expect(result.gaps.count == 4)
    }
}
