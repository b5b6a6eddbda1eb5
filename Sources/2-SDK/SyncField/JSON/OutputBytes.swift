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
package final class OutputBytes {
    @exclusivity(unchecked) package private(set) var count: Int = 0
    @exclusivity(unchecked) package private(set) var capacity: Int
    @exclusivity(unchecked) @usableFromInline var base: UnsafeMutablePointer<UInt8>

    package init(capacity: Int = 4096) {
        self.capacity = max(64, capacity)
        self.base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The encoded bytes. Valid until the next mutation.
    package var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Makes room for at least `extra` more bytes.
    @inline(__always)
    package func reserve(_ extra: Int) {
        if count + extra > capacity { grow(to: count + extra) }
    }

    @inline(never)
    private func grow(to needed: Int) {
        var newCapacity = capacity
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    package func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    package func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        reserve(bytes.count)
        (base + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    @inline(__always)
    package func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    @inline(__always)
    package func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    package func append(contentsOf other: OutputBytes) {
        append(other.bytes)
    }

    /// Writes `count` bytes directly into the buffer's free space through `body`, which returns
    /// how many it used.
    @inline(__always)
    package func appendInPlace(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        reserve(maxCount)
        count += body(base + count)
    }

    /// Drops everything after the first `newCount` bytes.
    package func truncate(to newCount: Int) {
        precondition(newCount >= 0 && newCount <= count)
        count = newCount
    }

    package func removeAll() { count = 0 }

    /// The contents as an array (for tests and small files).
    package var array: [UInt8] { Array(bytes) }
}
