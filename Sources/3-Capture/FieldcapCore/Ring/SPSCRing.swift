import Synchronization

/// A bounded single-producer, single-consumer ring of plain-data records: the hand-off between a
/// capture thread and the writer thread.
///
/// The producer owns `tail`, the consumer owns `head`. Each side reads its own index relaxed and
/// the other side's index acquiring, and only when its cached copy of it says the ring is full
/// (producer) or empty (consumer); each side publishes its index releasing. Capacity is a power of
/// two, so positions wrap with a mask. The two indices, and each side's cached copy of the other
/// one, live on four separate cache lines so the two threads never write the same line. (The
/// consumer refreshes its cached tail whenever it holds fewer records than a batch may take, so
/// a batch takes everything published, up to its limit.)
///
/// The producer never blocks and never allocates: `push` on a full ring returns `false` and
/// counts the drop (see `DropCounter`). The consumer takes records in batches, reading them in
/// place.
///
/// Thread-safe for one producer thread and one consumer thread at a time.
public final class SPSCRing<Element: BitwiseCopyable>: @unchecked Sendable {
    public let capacity: Int
    @usableFromInline let mask: Int
    @usableFromInline let storage: UnsafeMutablePointer<Element>

    // Generic and used from other modules: the hot members are @inlinable so callers get a copy
    // specialized for their record type instead of going through value witnesses.

    /// Four cache lines: [tail] [producer's cached head] [head] [consumer's cached tail].
    @usableFromInline let lines: UnsafeMutableRawPointer
    @usableFromInline static var lineSize: Int { 64 }
    @usableFromInline var tail: UnsafeMutablePointer<Atomic<Int>> {
        (lines + 0 * Self.lineSize).assumingMemoryBound(to: Atomic<Int>.self)
    }
    @usableFromInline var cachedHead: UnsafeMutablePointer<Int> {
        (lines + 1 * Self.lineSize).assumingMemoryBound(to: Int.self)
    }
    @usableFromInline var head: UnsafeMutablePointer<Atomic<Int>> {
        (lines + 2 * Self.lineSize).assumingMemoryBound(to: Atomic<Int>.self)
    }
    @usableFromInline var cachedTail: UnsafeMutablePointer<Int> {
        (lines + 3 * Self.lineSize).assumingMemoryBound(to: Int.self)
    }

    /// Drops, counted by the producer, readable from any thread.
    public let drops = DropCounter()

    /// A ring holding at least `minimumCapacity` records (rounded up to a power of two, at least 2).
    public init(minimumCapacity: Int) {
        precondition(minimumCapacity > 0, "a ring needs room for at least one record")
        var capacity = 2
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        self.mask = capacity - 1
        // Cache-line aligned, so a 64-byte record is one line, not two.
        storage = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<Element>.stride * capacity,
            alignment: max(Self.lineSize, MemoryLayout<Element>.alignment)
        ).bindMemory(to: Element.self, capacity: capacity)
        lines = .allocate(byteCount: 4 * Self.lineSize, alignment: Self.lineSize)
        lines.initializeMemory(as: UInt8.self, repeating: 0, count: 4 * Self.lineSize)
        tail.initialize(to: Atomic(0))
        head.initialize(to: Atomic(0))
        cachedHead.initialize(to: 0)
        cachedTail.initialize(to: 0)
    }

    deinit {
        tail.deinitialize(count: 1)
        head.deinitialize(count: 1)
        lines.deallocate()
        storage.deallocate()
    }

    // MARK: - Producer

    /// Appends `element`, or counts a drop of record `sequence` when the ring is full.
    ///
    /// Producer-bound. Never blocks, never allocates.
    ///
    /// - Returns: `false` when the record was dropped.
    @inlinable @inline(__always)
    @discardableResult
    public func push(_ element: Element, sequence: UInt64 = 0) -> Bool {
        if tryPush(element) { return true }
        drops.record(sequence)
        return false
    }

    /// Appends `element` if there is room; unlike `push`, a full ring is not counted as a drop
    /// (for producers that would rather wait and try again). Producer-bound.
    @inlinable @inline(__always)
    public func tryPush(_ element: Element) -> Bool {
        let position = tail.pointee.load(ordering: .relaxed)
        if position - cachedHead.pointee == capacity {
            cachedHead.pointee = head.pointee.load(ordering: .acquiring)
            if position - cachedHead.pointee == capacity { return false }
        }
        (storage + (position & mask)).initialize(to: element)
        tail.pointee.store(position + 1, ordering: .releasing)
        return true
    }

    // MARK: - Consumer

    /// Hands up to `limit` records to `body` in order, as at most two contiguous runs read in
    /// place (the ring's end and its start), then frees them. Returns how many were consumed.
    ///
    /// Consumer-bound. `body` must not keep the buffers.
    @inlinable @inline(__always)
    @discardableResult
    public func consume(limit: Int = .max, _ body: (UnsafeBufferPointer<Element>) -> Void) -> Int {
        let position = head.pointee.load(ordering: .relaxed)
        var available = cachedTail.pointee - position
        if available < limit {
            // The cached tail may be stale: a batch takes all that is there, up to the limit.
            cachedTail.pointee = tail.pointee.load(ordering: .acquiring)
            available = cachedTail.pointee - position
            if available == 0 { return 0 }
        }
        let count = min(available, limit)
        let start = position & mask
        let firstRun = min(count, capacity - start)
        body(UnsafeBufferPointer(start: storage + start, count: firstRun))
        if firstRun < count { body(UnsafeBufferPointer(start: storage, count: count - firstRun)) }
        head.pointee.store(position + count, ordering: .releasing)
        return count
    }

    /// Takes one record, if any. Consumer-bound.
    @inlinable @inline(__always)
    public func pop() -> Element? {
        var result: Element?
        consume(limit: 1) { result = $0[0] }
        return result
    }

    /// Records waiting, as the consumer sees them (any thread may ask; the answer is a snapshot).
    public var count: Int {
        tail.pointee.load(ordering: .acquiring) - head.pointee.load(ordering: .acquiring)
    }
}
