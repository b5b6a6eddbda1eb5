import Dispatch
import FieldcapCore
import Foundation
import Synchronization
import Testing

@testable import FieldcapEncode

/// An encoder that gives each frame back as it is, once `gate` lets it (a slow encoder, held
/// still for as long as a test needs), and fails at frame `failAt`.
final class GatedEncoder: FrameEncoder {
    let encodedFormat = VideoFormat(width: 4, height: 2, pixelFormat: .grey)
    let name = "gated"
    let gate = DispatchSemaphore(value: 0)
    let entered = DispatchSemaphore(value: 0)
    var open = false
    let failAt: UInt64?

    struct Broken: Error, CustomStringConvertible { var description: String { "the encoder broke" } }

    init(open: Bool = false, failAt: UInt64? = nil) {
        self.open = open
        self.failAt = failAt
    }

    func encode(
        _ frame: UnsafeRawBufferPointer, record: CaptureRecord,
        emit: FrameEncoder.Emit
    ) throws {
        entered.signal()
        if !open { gate.wait() }
        if record.sequence == failAt { throw Broken() }
        try emit(EncodedFrame(record: record, bytes: frame))
    }

    func drain(emit: FrameEncoder.Emit) throws {}
}

/// What a worker wrote, in order.
final class WrittenFrames: @unchecked Sendable {
    let lock = Mutex<[(sequence: UInt64, bytes: [UInt8])]>([])
    let syncs = Atomic<Int>(0)
    var all: [(sequence: UInt64, bytes: [UInt8])] { lock.withLock { $0 } }
}

@Suite("Encoding worker")
struct EncodingWorkerTests {
    static func frame(_ sequence: UInt64) -> (CaptureRecord, [UInt8]) {
        var record = CaptureRecord()
        record.sequence = sequence
        record.captureNs = 1_000 + sequence
        return (record, (0..<8).map { UInt8(truncatingIfNeeded: Int(sequence) * 8 + $0) })
    }

    static func worker(_ encoder: GatedEncoder, slots: Int, into written: WrittenFrames) -> EncodingWorker {
        EncodingWorker(
            name: "fc-enc-test", encoder: encoder, slots: slots, slotBytes: 8,
            output: { frame in written.lock.withLock { $0.append((frame.record.sequence, Array(frame.bytes))) } },
            sync: { written.syncs.add(1, ordering: .relaxed) })
    }

    @Test("an encoder behind by every slot refuses the next frames; the frames taken are written whole and in order")
    func refusesWhenBehind() throws {
        let encoder = GatedEncoder()
        let written = WrittenFrames()
        let worker = Self.worker(encoder, slots: 3, into: written)
        var taken: [UInt64] = []
        var refused: [UInt64] = []
        // Frame 0 is taken and its encoding held: its slot stays out until the gate opens.
        let (first, firstBytes) = Self.frame(0)
        #expect(try firstBytes.withUnsafeBytes { try worker.offer(first, frame: $0) })
        taken.append(0)
        encoder.entered.wait()
        for sequence in UInt64(1)...6 {
            let (record, bytes) = Self.frame(sequence)
            if try bytes.withUnsafeBytes({ try worker.offer(record, frame: $0) }) {
                taken.append(sequence)
            } else {
                refused.append(sequence)
            }
        }
        #expect(taken == [0, 1, 2])
        #expect(refused == [3, 4, 5, 6])
        encoder.open = true
        for _ in 0..<3 { encoder.gate.signal() }
        try worker.requestSync()
        try worker.finish()
        #expect(written.all.map(\.sequence) == [0, 1, 2])
        #expect(written.all.map(\.bytes) == [0, 1, 2].map { Self.frame($0).1 })
        #expect(worker.framesWritten == 3)
    }

    @Test("every frame offered while the encoder keeps up is written, in order, with the worker's own copy")
    func keepsUp() throws {
        let written = WrittenFrames()
        let worker = Self.worker(GatedEncoder(open: true), slots: 2, into: written)
        for sequence in UInt64(0)..<200 {
            var (record, bytes) = Self.frame(sequence)
            // A refused frame is offered again: here the test, not a camera, waits.
            while try !bytes.withUnsafeBytes({ try worker.offer(record, frame: $0) }) { usleep(100) }
            // The writer's buffer goes back to the camera at once: the worker must hold a copy.
            bytes = [UInt8](repeating: 0xEE, count: 8)
            record.sequence = .max
            _ = (record, bytes)
        }
        try worker.finish()
        #expect(written.all.map(\.sequence) == Array(0..<200))
        #expect(written.all.map(\.bytes) == (0..<200).map { Self.frame($0).1 })
    }

    @Test("an encoder that fails stops the worker, and the writer's next offer throws why")
    func failureSurfaces() throws {
        let written = WrittenFrames()
        let worker = Self.worker(GatedEncoder(open: true, failAt: 2), slots: 4, into: written)
        var thrown: Error?
        for sequence in UInt64(0)..<100 where thrown == nil {
            let (record, bytes) = Self.frame(sequence)
            do {
                _ = try bytes.withUnsafeBytes { try worker.offer(record, frame: $0) }
                usleep(2000)
            } catch { thrown = error }
        }
        #expect("\(thrown.map { "\($0)" } ?? "nothing")" == "the encoder broke")
        #expect(throws: GatedEncoder.Broken.self) { try worker.finish() }
        #expect(written.all.map(\.sequence) == [0, 1])
    }
}
