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
    var codesFramesAlone: Bool { true }

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

    static func worker(_ encoder: FrameEncoder, slots: Int, into written: WrittenFrames) -> EncodingWorker {
        worker([encoder], slots: slots, into: written)
    }

    static func worker(_ encoders: [FrameEncoder], slots: Int, into written: WrittenFrames) -> EncodingWorker {
        EncodingWorker(
            name: "fc-enc-test", encoders: encoders, slots: slots, slotBytes: 8,
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

    @Test(
        "three threads code frames at the same time and write them in the order offered, whichever finishes first"
    )
    func threadsWriteInOrder() throws {
        let encoders = (0..<3).map { _ in GatedEncoder() }
        let written = WrittenFrames()
        let worker = Self.worker(encoders, slots: 2, into: written)
        // Frames 0, 1, 2 go to threads 0, 1, 2: all three are inside their encoders at once.
        for sequence in UInt64(0)..<3 {
            let (record, bytes) = Self.frame(sequence)
            #expect(try bytes.withUnsafeBytes { try worker.offer(record, frame: $0) })
        }
        for encoder in encoders { encoder.entered.wait() }
        // The last finishes first, then the middle one: neither may be written before frame 0.
        encoders[2].open = true
        encoders[2].gate.signal()
        encoders[1].open = true
        encoders[1].gate.signal()
        usleep(100_000)
        #expect(written.all.isEmpty, "frames 1 and 2 wait for frame 0")
        encoders[0].open = true
        encoders[0].gate.signal()
        for sequence in UInt64(3)..<300 {
            let (record, bytes) = Self.frame(sequence)
            while try !bytes.withUnsafeBytes({ try worker.offer(record, frame: $0) }) { usleep(100) }
        }
        try worker.finish()
        #expect(written.all.map(\.sequence) == Array(0..<300))
        #expect(written.all.map(\.bytes) == (0..<300).map { Self.frame($0).1 })
    }

    @Test("a thread whose encoder fails stops the others, even those waiting for their turn, and the error surfaces")
    func threadFailureSurfaces() throws {
        let encoders = [GatedEncoder(open: true, failAt: 4), GatedEncoder(open: true)]
        let written = WrittenFrames()
        let worker = Self.worker(encoders, slots: 4, into: written)
        var thrown: Error?
        for sequence in UInt64(0)..<200 where thrown == nil {
            let (record, bytes) = Self.frame(sequence)
            do {
                _ = try bytes.withUnsafeBytes { try worker.offer(record, frame: $0) }
                usleep(1000)
            } catch { thrown = error }
        }
        #expect("\(thrown.map { "\($0)" } ?? "nothing")" == "the encoder broke")
        #expect(throws: GatedEncoder.Broken.self) { try worker.finish() }
        #expect(written.all.map(\.sequence) == [0, 1, 2, 3])
    }

    @Test(
        """
        an encoder with input buffers of its own: the writer fills them, \
        a buffer is offered again only once the encoder gave it back
        """
    )
    func encoderBuffers() throws {
        let encoder = BufferedEncoder(slots: 3, lent: nil)
        let written = WrittenFrames()
        let worker = Self.worker(encoder, slots: 8, into: written)
        #expect(worker.slotCount == 3 && worker.inputDescription == "copied into the encoder's buffers")
        var refused = 0
        for sequence in UInt64(0)..<6 {
            let (record, bytes) = Self.frame(sequence)
            if try !bytes.withUnsafeBytes({ try worker.offer(record, frame: $0) }) { refused += 1 }
        }
        // Three inside the encoder, which gives nothing back until told: three refused.
        #expect(refused == 3)
        encoder.giveBack.signal()
        encoder.giveBack.signal()
        encoder.giveBack.signal()
        // Waits for the encoder to hand the three back, however busy the machine.
        let deadline = DispatchTime.now() + 20
        while encoder.returned.load(ordering: .acquiring) < 3 && DispatchTime.now() < deadline { usleep(1_000) }
        let (record, bytes) = Self.frame(6)
        #expect(try bytes.withUnsafeBytes { try worker.offer(record, frame: $0) })
        encoder.giveAll.store(true, ordering: .releasing)
        for _ in 0..<4 { encoder.giveBack.signal() }
        try worker.finish()
        #expect(written.all.map(\.sequence) == [0, 1, 2, 6])
        #expect(
            written.all.map(\.bytes) == [0, 1, 2, 6].map { Self.frame($0).1 }, "each frame as the writer filled it")
    }

    @Test(
        """
        an encoder that imports the camera's buffers: no copy, each buffer \
        back to the camera only after both the writer and the encoder let go
        """
    )
    func cameraBuffers() throws {
        let returned = Mutex<[Int32]>([])
        let camera = SharedFrameBuffers(
            count: 8, length: 8, bytesPerLine: 8, export: { Array(100..<108) },
            giveBack: { index in returned.withLock { $0.append(index) } })
        let encoder = BufferedEncoder(slots: 2, lent: camera)
        let written = WrittenFrames()
        let worker = Self.worker(encoder, slots: 8, into: written)
        #expect(worker.inputDescription == "DMABUF (the camera's buffers)")
        var frames: [[UInt8]] = []
        for sequence in UInt64(0)..<3 {
            var (record, bytes) = Self.frame(sequence)
            record.bufferIndex = Int32(sequence + 4)
            camera.lend(record.bufferIndex)
            let taken = try bytes.withUnsafeBytes { try worker.offer(record, frame: $0) }
            // The writer lets go at once, taken or not (the recorder's `releaseBuffer`).
            camera.release(record.bufferIndex)
            if taken { frames.append(bytes) }
        }
        // Two lent to the encoder (its limit), the third refused and back at once.
        #expect(frames.count == 2)
        #expect(returned.withLock { $0 } == [6])
        encoder.giveAll.store(true, ordering: .releasing)
        encoder.giveBack.signal()
        encoder.giveBack.signal()
        try worker.finish()
        #expect(Set(returned.withLock { $0 }) == [4, 5, 6])
        #expect(written.all.map(\.sequence) == [0, 1])
        #expect(encoder.readFromCamera == [4, 5], "the encoder read the camera's buffers, by index")
    }
}

/// An encoder with input buffers of its own (as a V4L2 encoder's OUTPUT queue), or reading the
/// camera's (`lent`): it keeps each frame until `giveBack` lets one go (all, once `giveAll`).
final class BufferedEncoder: BufferedFrameEncoder, @unchecked Sendable {
    let encodedFormat = VideoFormat(width: 4, height: 2, pixelFormat: .grey)
    let name = "buffered"
    let inputSlots: Int
    let importedBuffers: SharedFrameBuffers?
    let inputLayout: String? = nil
    var inputReturned: (Int) -> Void = { _ in }
    let giveBack = DispatchSemaphore(value: 0)
    let giveAll = Atomic<Bool>(false)
    /// Inputs handed back to the worker so far.
    let returned = Atomic<Int>(0)
    private var buffers: [[UInt8]]
    private var held: [(slot: Int, record: CaptureRecord)] = []
    private(set) var readFromCamera: [Int] = []

    init(slots: Int, lent: SharedFrameBuffers?) {
        inputSlots = slots
        importedBuffers = lent
        buffers = Array(repeating: [], count: slots)
    }

    func fill(_ slot: Int, with frame: UnsafeRawBufferPointer) { buffers[slot] = Array(frame) }

    func encode(input slot: Int, length: Int, record: CaptureRecord, emit: FrameEncoder.Emit) throws {
        if importedBuffers != nil { readFromCamera.append(slot) }
        held.append((slot, record))
        // Hold every slot but wait for the test to let one go, as a hardware pipeline would.
        while held.count >= inputSlots || giveAll.load(ordering: .acquiring) {
            if held.isEmpty { return }
            if !giveAll.load(ordering: .acquiring) { giveBack.wait() }
            try release(emit: emit)
        }
    }

    private func release(emit: FrameEncoder.Emit) throws {
        let (slot, record) = held.removeFirst()
        let bytes = importedBuffers == nil ? buffers[slot] : Self.bytes(record.sequence)
        try bytes.withUnsafeBytes { try emit(EncodedFrame(record: record, bytes: $0)) }
        inputReturned(slot)
        returned.add(1, ordering: .releasing)
    }

    static func bytes(_ sequence: UInt64) -> [UInt8] { EncodingWorkerTests.frame(sequence).1 }

    func encode(_ frame: UnsafeRawBufferPointer, record: CaptureRecord, emit: FrameEncoder.Emit) throws {}

    func drain(emit: FrameEncoder.Emit) throws {
        while !held.isEmpty { try release(emit: emit) }
    }
}
