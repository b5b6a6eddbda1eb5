import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The bounded multi-producer, single-consumer queue between callers and the writer thread.
///
/// Any thread may enqueue; the writer thread alone dequeues. A producer claims a position with
/// one atomic add on `tail` (no lock, no CAS loop), fills the slot, and publishes it by storing
/// the slot's sequence with release ordering; the consumer takes slots in position order once
/// their sequence says they are published (Vyukov's bounded queue, with an add instead of a CAS
/// because a producer that finds the queue full waits anyway). Position order is claim order, so
/// calls on one stream come out in the order they were made.
///
/// `tail` also carries the run's state: bit 63 is set when the queue is closed (by `stop()`), and
/// bits 40...62 hold the run's epoch, so a call that checked its stream for one run and claims a
/// slot in the next is told so and refused instead of writing into the wrong run.
///
/// A full queue makes the producer wait for the writer (backpressure, never loss): the library
/// API promises every accepted line reaches the file. The wait is the only place a producer
/// sleeps, and it happens only when the writer cannot keep up.
///
/// Thread-safe for `enqueue`; `drain`, `reopen` and `head` are writer-bound.
final class EntryQueue: @unchecked Sendable {
    struct Slot: ~Copyable {
        let sequence: Atomic<Int>
        var entry = QueueEntry()
        var channels: [String: Any]? = nil

        init(sequence: Int) { self.sequence = Atomic(sequence) }
    }

    enum Refusal: Error {
        /// The queue is closed, or the call belongs to an earlier run.
        case closed
    }

    static let closedBit = 1 << 63
    static let epochShift = 40
    static let positionMask = (1 << 40) - 1
    static let epochMask = (1 << 23) - 1

    let capacity: Int
    private let mask: Int
    private let slots: UnsafeMutablePointer<Slot>
    private let slotMemory: UnsafeMutableRawPointer
    /// On a cache line of its own: every producer adds to it, nothing else lives there.
    private let tailMemory: UnsafeMutableRawPointer
    private var tail: UnsafeMutablePointer<Atomic<Int>>
    /// How many times a producer found the queue full and had to wait.
    let fullWaits = Atomic<Int>(0)

    /// The consumer's next position. Writer-bound.
    private(set) var head = 0
    /// `head`, published after each drain for producers that look at how full the queue is.
    private let consumed = Atomic<Int>(0)

    init(capacity requested: Int) {
        var capacity = 64
        while capacity < requested { capacity <<= 1 }
        self.capacity = capacity
        self.mask = capacity - 1
        slotMemory = .allocate(byteCount: MemoryLayout<Slot>.stride * capacity, alignment: 64)
        slots = slotMemory.bindMemory(to: Slot.self, capacity: capacity)
        for index in 0..<capacity { (slots + index).initialize(to: Slot(sequence: index)) }
        tailMemory = .allocate(byteCount: 128, alignment: 64)
        tail = tailMemory.bindMemory(to: Atomic<Int>.self, capacity: 1)
        tail.initialize(to: Atomic(Self.closedBit))
    }

    deinit {
        (slots).deinitialize(count: capacity)
        slotMemory.deallocate()
        tail.deinitialize(count: 1)
        tailMemory.deallocate()
    }

    /// Opens the queue for a new run. Call only while no entry is in flight (after `close` and a
    /// full drain, or before the first run).
    func reopen(epoch: Int) {
        for index in 0..<capacity {
            (slots + index).pointee.sequence.store(index, ordering: .relaxed)
        }
        head = 0
        consumed.store(0, ordering: .relaxed)
        tail.pointee.store((epoch & Self.epochMask) << Self.epochShift, ordering: .releasing)
    }

    /// Closes the queue: later enqueues are refused. Returns the position the consumer must
    /// reach to have seen every accepted entry.
    func close() -> Int {
        let old = tail.pointee.bitwiseOr(Self.closedBit, ordering: .acquiringAndReleasing).oldValue
        return old & Self.positionMask
    }

    /// Enqueues one entry for the run `epoch`. Never takes a lock; waits only when full.
    @inline(__always)
    func enqueue(epoch: Int, _ entry: borrowing QueueEntry, channels: [String: Any]? = nil) throws(Refusal) {
        let word = tail.pointee.wrappingAdd(1, ordering: .relaxed).oldValue
        if word & Self.closedBit != 0 { throw .closed }
        let position = word & Self.positionMask
        let slot = slots + (position & mask)
        if slot.pointee.sequence.load(ordering: .acquiring) != position { waitUntilFree(slot, position) }
        guard (word >> Self.epochShift) & Self.epochMask == epoch & Self.epochMask else {
            // The slot is claimed, so it must be published; it goes out empty.
            slot.pointee.entry.kind = .void
            slot.pointee.sequence.store(position + 1, ordering: .releasing)
            throw .closed
        }
        slot.pointee.entry = copy entry
        if let channels { slot.pointee.channels = channels }
        slot.pointee.sequence.store(position + 1, ordering: .releasing)
    }

    /// Positions claimed so far in this run (an entry enqueued before this call has a lower one).
    var claimedPosition: Int { tail.pointee.load(ordering: .relaxed) & Self.positionMask }

    /// Positions the writer has drained so far in this run (every entry below it is written out
    /// of the queue).
    var drainedPosition: Int { consumed.load(ordering: .acquiring) }

    /// Whether fewer than `limit` entries wait in the queue (claimed and not yet drained), as
    /// far as this thread can see: an estimate another producer may change at once.
    func holdsFewer(than limit: Int) -> Bool {
        let claimed = tail.pointee.load(ordering: .relaxed) & Self.positionMask
        return claimed - consumed.load(ordering: .relaxed) < limit
    }

    private func waitUntilFree(_ slot: UnsafeMutablePointer<Slot>, _ position: Int) {
        fullWaits.add(1, ordering: .relaxed)
        var spins = 0
        while slot.pointee.sequence.load(ordering: .acquiring) != position {
            spins += 1
            if spins < 4 {
                sched_yield()
            } else {
                var pause = timespec(tv_sec: 0, tv_nsec: 50_000)
                nanosleep(&pause, nil)
            }
        }
    }

    /// Hands up to `limit` published entries to `body`, in position order, and frees their
    /// slots. Returns how many it handed over. Writer-bound.
    @inline(__always)
    func drain(limit: Int, _ body: (borrowing QueueEntry, consuming [String: Any]?) -> Void) -> Int {
        var taken = 0
        while taken < limit {
            let slot = slots + (head & mask)
            guard slot.pointee.sequence.load(ordering: .acquiring) == head + 1 else { break }
            let channels = slot.pointee.channels.take()
            body(slot.pointee.entry, channels)
            slot.pointee.sequence.store(head + capacity, ordering: .releasing)
            head += 1
            taken += 1
        }
        if taken > 0 { consumed.store(head, ordering: .releasing) }
        return taken
    }
}
