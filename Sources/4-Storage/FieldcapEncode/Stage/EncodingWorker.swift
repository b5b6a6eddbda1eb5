import CFieldcapLinux
import Dispatch
import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Encodes one camera's frames on threads of its own, beside the camera's writer, so that an
/// encoder never holds capture up.
///
/// The writer `offer`s each frame and the camera gets its buffer back at once, as for a raw
/// frame: the frame is copied once into a free input slot, or, for an encoder that imports the
/// camera's buffers (`BufferedFrameEncoder`, DMABUF), not copied at all, the buffer lent to the
/// encoder until it is done with it. When no slot is free (the encoder is behind by all of them)
/// the offer is refused and the frame dropped, never queued without bound.
///
/// With more than one thread (`encoders.count`, encoders whose frames are coded each on its own:
/// JPEG, FFV1), frames are dealt to the threads in turn and coded at the same time, and written in
/// the order they were offered: each thread waits for the frame before its own to be written
/// before it writes. Frames are numbered as they are written, so a dropped frame never leaves a
/// hole in the numbers.
///
/// The threads run at nice 10 (Linux's nice is per thread): on a CPU with too much to do, the
/// scheduler takes the time from the encoders, whose drops are counted, before the capture
/// threads and writers, which must keep up with their devices.
///
/// Slots travel between the writer and each thread through two SPSC rings (free ones back to the
/// writer, filled ones to the thread); a thread sleeps on a semaphore the writer raises per frame.
///
/// Thread-safe as used: `offer` and `requestSync` from the writer thread, `finish` from the
/// thread that closes the sink once the writer is joined.
public final class EncodingWorker: @unchecked Sendable {
    /// A frame for a thread: its record, where it lies (a slot of the thread's memory, an input
    /// buffer of the encoder's, or the camera's buffer), its length, and its place in the order.
    struct Job {
        var record: CaptureRecord
        var slot: Int32
        var length: Int
        var ticket: Int
    }

    /// Writes one encoded frame (called on the thread that holds the turn).
    public typealias Output = FrameEncoder.Emit

    /// Where a thread's frames wait to be coded.
    enum Input {
        /// Slots of the thread's own memory, `slotBytes` each.
        case copied(UnsafeMutableRawPointer)
        /// The encoder's own input buffers, filled by the writer.
        case encoderBuffers(BufferedFrameEncoder)
        /// The camera's buffers, lent to the encoder (DMABUF); the free ring holds tokens.
        case cameraBuffers(BufferedFrameEncoder, SharedFrameBuffers)
    }

    /// One encoding thread: its encoder, its slots, its queue.
    final class Lane: @unchecked Sendable {
        let index: Int
        let encoder: FrameEncoder
        let input: Input
        let free: SPSCRing<Int32>
        let jobs: SPSCRing<Job>
        let wake = DispatchSemaphore(value: 0)
        /// Raised when the frame before this thread's next one has been written.
        let turn = DispatchSemaphore(value: 0)
        var thread: DedicatedThread?

        init(index: Int, encoder: FrameEncoder, input: Input, slots: Int) {
            self.index = index
            self.encoder = encoder
            self.input = input
            free = SPSCRing(minimumCapacity: slots)
            jobs = SPSCRing(minimumCapacity: slots)
            for slot in 0..<slots { _ = free.tryPush(Int32(slot)) }
        }
    }

    public let name: String
    /// Frames each thread may be behind by before the writer's offers to it are refused.
    public let slotCount: Int
    public let slotBytes: Int
    /// How the frames reach the encoder: "copied", "copied into the encoder's buffers" or
    /// "DMABUF (the camera's buffers)".
    public let inputDescription: String
    private let lanes: [Lane]
    private let output: Output
    private let sync: () throws -> Void
    private let writeLock = Mutex<Void>(())
    /// The ticket of the next frame to be written: frames are written in the order offered.
    private let nextToWrite = Atomic<Int>(0)
    /// The writer's count of frames taken (the next ticket). Writer-bound.
    private var ticketsIssued = 0
    private let syncRequested = Atomic<Bool>(false)
    private let finishing = Atomic<Bool>(false)
    private let failed = Atomic<Bool>(false)
    private let failure = Mutex<Error?>(nil)
    private var joined = false
    /// Frames encoded and written, published by the threads.
    private let written = Atomic<Int>(0)

    /// - Parameters:
    ///   - encoders: one per thread. More than one only of encoders that code each frame on its
    ///     own (`codesFramesAlone`).
    ///   - slots: frames each thread may be behind by before the writer's offers are refused.
    ///     A `BufferedFrameEncoder` has as many as it has input buffers.
    ///   - slotBytes: the largest frame offered (a raw frame's size).
    ///   - output: writes an encoded frame; `sync` makes what it wrote durable. Both on a worker
    ///     thread, never two at once.
    public init(
        name: String, encoders: [FrameEncoder], slots: Int, slotBytes: Int, output: @escaping Output,
        sync: @escaping () throws -> Void
    ) {
        precondition(!encoders.isEmpty && slots > 0 && slotBytes > 0, "an encoding worker needs encoders and slots")
        precondition(
            encoders.count == 1 || encoders.allSatisfy(\.codesFramesAlone),
            "only encoders that code each frame alone share a camera")
        self.name = name
        self.slotBytes = slotBytes
        self.output = output
        self.sync = sync
        var description = "copied"
        var slotCount = slots
        lanes = encoders.enumerated().map { index, encoder in
            let input: Input
            var laneSlots = slots
            if let buffered = encoder as? BufferedFrameEncoder {
                laneSlots = buffered.inputSlots
                if let lent = buffered.importedBuffers {
                    input = .cameraBuffers(buffered, lent)
                    description = "DMABUF (the camera's buffers)"
                } else {
                    input = .encoderBuffers(buffered)
                    description =
                        "copied into the encoder's buffers" + (buffered.inputLayout.map { ", \($0)" } ?? "")
                }
            } else {
                // Page-aligned, so a frame copied in lies as a camera's buffer does.
                input = .copied(UnsafeMutableRawPointer.allocate(byteCount: slots * slotBytes, alignment: 4096))
            }
            slotCount = laneSlots
            return Lane(index: index, encoder: encoder, input: input, slots: laneSlots)
        }
        self.slotCount = slotCount
        inputDescription = description
        for lane in lanes {
            if case .encoderBuffers(let buffered) = lane.input {
                buffered.inputReturned = { [lane] slot in _ = lane.free.tryPush(Int32(slot)) }
            } else if case .cameraBuffers(let buffered, let lent) = lane.input {
                // Any token: the camera's buffer goes back to the camera, the token to the writer.
                buffered.inputReturned = { [lane] buffer in
                    lent.release(Int32(buffer))
                    _ = lane.free.tryPush(0)
                }
            }
            let name = lanes.count == 1 ? name : "\(name.prefix(13))-\(lane.index)"
            lane.thread = DedicatedThread(name: name) { [self] in run(lane) }
        }
    }

    deinit {
        if !joined { try? finish() }
        for lane in lanes { if case .copied(let memory) = lane.input { memory.deallocate() } }
    }

    /// Frames written so far (any thread).
    public var framesWritten: Int { written.load(ordering: .relaxed) }

    /// Hands `frame` to the next thread in turn: copied into a free slot, or its camera buffer
    /// (`record.bufferIndex`) lent to an encoder that imports it. Writer-bound.
    ///
    /// - Returns: false when the thread has no free slot (the encoder is behind): the frame is
    ///   dropped.
    /// - Throws: what a thread failed with (an encoder error, a write error), once it has.
    public func offer(_ record: CaptureRecord, frame: UnsafeRawBufferPointer) throws -> Bool {
        try rethrowFailure()
        guard frame.count <= slotBytes else {
            throw EncodeError(.encoder, "\(name): a frame of \(frame.count) bytes is larger than a slot (\(slotBytes))")
        }
        let lane = lanes[ticketsIssued % lanes.count]
        guard let slot = lane.free.pop() else { return false }
        var job = Job(record: record, slot: slot, length: frame.count, ticket: ticketsIssued)
        switch lane.input {
        case .copied(let memory):
            if let source = frame.baseAddress {
                (memory + Int(slot) * slotBytes).copyMemory(from: source, byteCount: frame.count)
            }
        case .encoderBuffers(let buffered):
            buffered.fill(Int(slot), with: frame)
        case .cameraBuffers(_, let lent):
            // Held past the writer's own release, until the encoder gives it back.
            lent.hold(record.bufferIndex)
            job.slot = record.bufferIndex
        }
        ticketsIssued += 1
        // Cannot fail: the ring holds every slot.
        _ = lane.jobs.tryPush(job)
        lane.wake.signal()
        return true
    }

    /// Asks a thread to make what was written durable at its next turn. Writer-bound.
    public func requestSync() throws {
        try rethrowFailure()
        syncRequested.store(true, ordering: .releasing)
        lanes[0].wake.signal()
    }

    /// Encodes and writes every frame offered, drains the encoders, and stops the threads.
    /// Throws what a thread failed with.
    public func finish() throws {
        guard !joined else { return }
        finishing.store(true, ordering: .releasing)
        for lane in lanes { lane.wake.signal() }
        for lane in lanes {
            lane.thread?.join()
            lane.thread = nil
        }
        joined = true
        try rethrowFailure()
    }

    private func rethrowFailure() throws {
        guard failed.load(ordering: .acquiring) else { return }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func fail(_ error: Error) {
        failure.withLock { $0 = $0 ?? error }
        failed.store(true, ordering: .releasing)
        // Threads waiting for their turn must see it.
        for lane in lanes { lane.turn.signal() }
    }

    /// Waits until the frame with `ticket` is the next to be written; false if a thread failed
    /// meanwhile (the frame before it will never be written).
    private func awaitTurn(_ ticket: Int, _ lane: Lane) -> Bool {
        while nextToWrite.load(ordering: .acquiring) != ticket {
            if failed.load(ordering: .acquiring) { return false }
            _ = lane.turn.wait(timeout: .now() + .milliseconds(100))
        }
        return true
    }

    /// The frame with `ticket` is written (or was never coded): the next one's thread may write.
    private func passTurn(after ticket: Int) {
        nextToWrite.store(ticket + 1, ordering: .releasing)
        if lanes.count > 1 { lanes[(ticket + 1) % lanes.count].turn.signal() }
    }

    /// Writes one coded frame, and syncs when asked, under the lock that keeps the outputs to one
    /// thread at a time.
    private func write(_ frame: EncodedFrame) throws {
        try writeLock.withLock { _ in
            try output(frame)
            written.add(1, ordering: .relaxed)
            if syncRequested.exchange(false, ordering: .acquiringAndReleasing) { try sync() }
        }
    }

    /// A thread's loop: one frame at a time, written in its turn, a sync when asked (the first
    /// thread, between frames), until finishing with nothing left; then its encoder drains.
    private func run(_ lane: Lane) {
        _ = CFieldcapLinux_nice_thread(10)
        // An encoder that holds frames (a hardware one) emits earlier frames from a later
        // encode: with one thread the order is the encoder's, and no turn is awaited.
        let ordered = lanes.count > 1
        var ticket = 0
        var emitted = false
        let emit: Output = { [self] frame in
            if ordered {
                guard awaitTurn(ticket, lane) else { throw EncodeError(.encoder, "\(name): stopped") }
            }
            try write(frame)
            emitted = true
            if ordered { passTurn(after: ticket) }
        }
        do {
            while true {
                // Read before taking: once finishing, the writer has offered its last frame.
                let finishingNow = finishing.load(ordering: .acquiring)
                var job: Job?
                lane.jobs.consume(limit: 1) { job = $0[0] }
                if let job {
                    ticket = job.ticket
                    emitted = false
                    switch lane.input {
                    case .copied(let memory):
                        defer { _ = lane.free.tryPush(job.slot) }
                        let frame = UnsafeRawBufferPointer(start: memory + Int(job.slot) * slotBytes, count: job.length)
                        try lane.encoder.encode(frame, record: job.record, emit: emit)
                    case .encoderBuffers(let buffered), .cameraBuffers(let buffered, _):
                        try buffered.encode(input: Int(job.slot), length: job.length, record: job.record, emit: emit)
                    }
                    // A frame-alone encoder that coded nothing for it still passes the turn.
                    if ordered && !emitted {
                        guard awaitTurn(ticket, lane) else { break }
                        passTurn(after: ticket)
                    }
                }
                if lane.index == 0 && syncRequested.load(ordering: .acquiring) {
                    try writeLock.withLock { _ in
                        if syncRequested.exchange(false, ordering: .acquiringAndReleasing) { try sync() }
                    }
                }
                if job == nil {
                    if finishingNow || failed.load(ordering: .acquiring) { break }
                    _ = lane.wake.wait(timeout: .now() + .milliseconds(100))
                }
            }
            if !failed.load(ordering: .acquiring) {
                try lane.encoder.drain { frame in try self.write(frame) }
            }
        } catch {
            fail(error)
        }
        // Nothing more is coded; the writer's next offer throws the error. Lent camera buffers
        // still queued go back to the camera.
        while let job = lane.jobs.pop() {
            if case .cameraBuffers(_, let lent) = lane.input { lent.release(job.record.bufferIndex) }
        }
    }
}
