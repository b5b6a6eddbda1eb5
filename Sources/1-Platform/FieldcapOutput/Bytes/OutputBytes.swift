/// A growable byte buffer that JSON lines are encoded into before they are written.
///
/// It exists because the writer appends millions of small pieces per second: a raw
/// pointer with an explicit capacity keeps each append to a bounds check and a copy, with
/// no copy-on-write checks and no allocation once the buffer has reached its working size.
///
/// Thread-bound: one owner at a time.
///
/// The stored properties skip Swift's run-time exclusivity checks: every append changes
/// `count`, and checking each change (`swift_beginAccess`) was about 7% of an IMU recording's
/// CPU in a profile. The buffer is thread-bound and never hands out `inout` access to them.
public final class OutputBytes {
    // Stored under internal names so the appends can be inlined into the SDK's encoders and
    // fieldcap's: an inlinable body may use only public or @usableFromInline declarations.
    @exclusivity(unchecked) @usableFromInline var storedCount: Int = 0
    @exclusivity(unchecked) @usableFromInline var storedCapacity: Int
    @exclusivity(unchecked) @usableFromInline var base: UnsafeMutablePointer<UInt8>

    public init(capacity: Int = 4096) {
        self.storedCapacity = max(64, capacity)
        self.base = .allocate(capacity: self.storedCapacity)
    }

    deinit { base.deallocate() }

    /// How many bytes it holds.
    @inlinable public var count: Int { storedCount }

    /// How many it can hold before it grows.
    public var capacity: Int { storedCapacity }

    /// The encoded bytes. Valid until the next mutation.
    @inlinable
    public var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: storedCount) }

    /// Makes room for at least `extra` more bytes.
    @inlinable @inline(__always)
    public func reserve(_ extra: Int) {
        if storedCount + extra > storedCapacity { grow(to: storedCount + extra) }
    }

    @usableFromInline @inline(never)
    func grow(to needed: Int) {
        var newCapacity = storedCapacity
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: storedCount)
        base.deallocate()
        base = newBase
        storedCapacity = newCapacity
    }

    @inlinable @inline(__always)
    public func append(_ byte: UInt8) {
        reserve(1)
        base[storedCount] = byte
        storedCount += 1
    }

    @inlinable @inline(__always)
    public func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + storedCount).update(from: source, count: bytes.count)
        storedCount += bytes.count
    }

    @inlinable @inline(__always)
    public func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    @inlinable @inline(__always)
    public func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inlinable @inline(__always)
    public func append(contentsOf other: OutputBytes) {
        append(other.bytes)
    }

    /// Writes `count` bytes directly into the buffer's free space through `body`, which returns
    /// how many it used.
    @inlinable @inline(__always)
    public func appendInPlace(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        reserve(maxCount)
        storedCount += body(base + storedCount)
    }

    /// Drops everything after the first `newCount` bytes.
    @inlinable
    public func truncate(to newCount: Int) {
        precondition(newCount >= 0 && newCount <= storedCount)
        storedCount = newCount
    }

    @inlinable
    public func removeAll() { storedCount = 0 }

    /// The contents as an array (for tests and small files).
    public var array: [UInt8] { Array(bytes) }
}
