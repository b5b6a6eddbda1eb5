import CFieldcapLinux
import Dispatch
import FieldcapCore
import SyncField
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Encodes one camera's frames on a thread of its own, beside the camera's writer, so that an
/// encoder never holds capture up.
///
/// The writer `offer`s each frame: it is copied once into a free slot of a fixed pool, and the
/// camera gets its buffer back at once, as for a raw frame. When no slot is free (the encoder is
/// behind by the whole pool) the offer is refused and the frame dropped, never queued without
/// bound. The worker encodes the frames in order and hands each encoded one to `output`, which
/// writes it (the video, then its lines): frames are numbered as they are written, so a dropped
/// frame never leaves a hole in the numbers.
///
/// The worker runs at nice 10 (Linux's nice is per thread): on a CPU with too much to do, the
/// scheduler takes the time from the encoder, whose drops are counted, before the capture threads
/// and writers, which must keep up with their devices.
///
/// Slots travel between the two threads through two SPSC rings (free ones back to the writer,
/// filled ones to the worker); the worker sleeps on a semaphore the writer raises per frame.
///
/// Thread-safe as used: `offer` and `requestSync` from the writer thread, `finish` from the
/// thread that closes the sink once the writer is joined.
public final class EncodingWorker: @unchecked Sendable {
    /// A filled slot.
    struct Job {
        var record: CaptureRecord
        var slot: Int32
        var length: Int
    }

    /// Writes one encoded frame (called on the worker).
    public typealias Output = FrameEncoder.Emit

    public let name: String
    public let slotCount: Int
    public let slotBytes: Int
    private let encoder: FrameEncoder
    private let output: Output
    private let sync: () throws -> Void
    private let slots: UnsafeMutableRawPointer
    private let free: SPSCRing<Int32>
    private let jobs: SPSCRing<Job>
    private let wake = DispatchSemaphore(value: 0)
    private let syncRequested = Atomic<Bool>(false)
    private let finishing = Atomic<Bool>(false)
    private let failed = Atomic<Bool>(false)
    private let failure = Mutex<Error?>(nil)
    private var thread: DedicatedThread?
    /// Frames encoded and written, published by the worker.
    private let written = Atomic<Int>(0)

    /// - Parameters:
    ///   - slots: frames the encoder may be behind by before the writer's offers are refused.
    ///   - slotBytes: the largest frame offered (a raw frame's size).
    ///   - output: writes an encoded frame; `sync` makes what it wrote durable. Both on the worker.
    public init(
        name: String, encoder: FrameEncoder, slots: Int, slotBytes: Int, output: @escaping Output,
        sync: @escaping () throws -> Void
    ) {
        precondition(slots > 0 && slotBytes > 0, "an encoding worker needs slots")
        self.name = name
        self.encoder = encoder
        self.slotCount = slots
        self.slotBytes = slotBytes
        self.output = output
        self.sync = sync
        // Page-aligned, so a frame copied in lies as a camera's buffer does.
        self.slots = UnsafeMutableRawPointer.allocate(byteCount: slots * slotBytes, alignment: 4096)
        free = SPSCRing(minimumCapacity: slots)
        jobs = SPSCRing(minimumCapacity: slots)
        for slot in 0..<slots { _ = free.tryPush(Int32(slot)) }
        thread = DedicatedThread(name: name) { [self] in run() }
    }

    deinit {
        if thread != nil { try? finish() }
        slots.deallocate()
    }

    /// Frames written so far (any thread).
    public var framesWritten: Int { written.load(ordering: .relaxed) }

    /// Copies `frame` into a free slot for the worker. Writer-bound.
    ///
    /// - Returns: false when every slot is taken (the encoder is behind): the frame is dropped.
    /// - Throws: what the worker failed with (an encoder error, a write error), once it has.
    public func offer(_ record: CaptureRecord, frame: UnsafeRawBufferPointer) throws -> Bool {
        try rethrowFailure()
        guard frame.count <= slotBytes else {
            throw EncodeError(.encoder, "\(name): a frame of \(frame.count) bytes is larger than a slot (\(slotBytes))")
        }
        guard let slot = free.pop() else { return false }
        if let source = frame.baseAddress {
            (slots + Int(slot) * slotBytes).copyMemory(from: source, byteCount: frame.count)
        }
        // Cannot fail: the ring holds every slot.
        _ = jobs.tryPush(Job(record: record, slot: slot, length: frame.count))
        wake.signal()
        return true
    }

    /// Asks the worker to make what it wrote durable at its next turn. Writer-bound.
    public func requestSync() throws {
        try rethrowFailure()
        syncRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Encodes and writes every frame offered, drains the encoder, and stops the worker.
    /// Throws what the worker failed with.
    public func finish() throws {
        guard let thread else { return }
        finishing.store(true, ordering: .releasing)
        wake.signal()
        thread.join()
        self.thread = nil
        try rethrowFailure()
    }

    private func rethrowFailure() throws {
        guard failed.load(ordering: .acquiring) else { return }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func fail(_ error: Error) {
        failure.withLock { $0 = $0 ?? error }
        failed.store(true, ordering: .releasing)
    }

    /// The worker's loop: one frame at a time (its slot goes back as soon as it is encoded),
    /// a sync when asked, until finishing with nothing left.
    private func run() {
        _ = CFieldcapLinux_nice_thread(10)
        let emit: Output = { [self] frame in
            try output(frame)
            written.add(1, ordering: .relaxed)
        }
        do {
            while true {
                // Read before taking: once finishing, the writer has offered its last frame.
                let finishingNow = finishing.load(ordering: .acquiring)
                var job: Job?
                jobs.consume(limit: 1) { job = $0[0] }
                if let job {
                    defer { _ = free.tryPush(job.slot) }
                    let frame = UnsafeRawBufferPointer(start: slots + Int(job.slot) * slotBytes, count: job.length)
                    try encoder.encode(frame, record: job.record, emit: emit)
                }
                if syncRequested.exchange(false, ordering: .acquiringAndReleasing) { try sync() }
                if job == nil {
                    if finishingNow { break }
                    _ = wake.wait(timeout: .now() + .milliseconds(100))
                }
            }
            try encoder.drain(emit: emit)
        } catch {
            fail(error)
            // Nothing more is written; the writer's next offer throws the error.
            while jobs.pop() != nil {}
        }
    }
}
