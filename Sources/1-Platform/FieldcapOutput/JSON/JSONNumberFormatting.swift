/// Receives the digits of `Double.write(to:)` and `Float.write(to:)`.
///
/// Foundation's `JSONSerialization` spells floating-point numbers with `description`, which
/// builds a `String` (a heap allocation for anything longer than 15 bytes). `write(to:)` runs
/// the same shortest-round-trip formatter into a stack buffer and hands the ASCII bytes to the
/// stream's `_writeASCII`, so implementing that requirement gives `description`'s exact bytes
/// with no allocation.
@usableFromInline
struct ByteBufferStream: TextOutputStream {
    /// Unmanaged: the stream lives only inside a call on `out`, and a strong reference cost a
    /// retain and a release per number.
    @usableFromInline let out: Unmanaged<OutputBytes>

    @inlinable init(out: OutputBytes) { self.out = .passUnretained(out) }

    @inlinable
    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { bytes in out._withUnsafeGuaranteedRef { $0.append(bytes) } }
    }

    @inlinable @inline(__always)
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        out._withUnsafeGuaranteedRef { $0.append(buffer) }
    }
}

/// Number spellings exactly as Foundation's `JSONSerialization` writes them.
extension OutputBytes {
    /// Appends a finite `Double` as `description` spells it, minus a trailing `.0`
    /// (`12`, `-0`, `1e+16`, `1e-05`, `0.30000000000000004`).
    @inlinable @inline(__always)
    public func appendJSONNumber(_ value: Double) {
        precondition(value.isFinite, "non-finite numbers are rejected before encoding")
        appendShortestSpelling(value)
    }

    /// Appends a finite `Float` as `Float.description` spells it, minus a trailing `.0`.
    @inlinable @inline(__always)
    public func appendJSONNumber(_ value: Float) {
        precondition(value.isFinite, "non-finite numbers are rejected before encoding")
        appendShortestSpelling(value)
    }

    /// `description`'s digits through `write(to:)`, minus a trailing `.0`.
    @inlinable @inline(__always)
    func appendShortestSpelling(_ value: some TextOutputStreamable) {
        let start = count
        var stream = ByteBufferStream(out: self)
        value.write(to: &stream)
        stripPointZero(from: start)
    }

    @inlinable @inline(__always)
    func stripPointZero(from start: Int) {
        if count - start >= 2 && base[count - 2] == UInt8(ascii: ".") && base[count - 1] == UInt8(ascii: "0") {
            truncate(to: count - 2)
        }
    }

    /// Appends an unsigned integer in decimal.
    @inlinable @inline(__always)
    public func appendJSONNumber(_ value: UInt64) {
        appendInPlace(maxCount: 20) { out in Self.writeDecimal(value, to: out) }
    }

    /// Appends a signed integer in decimal.
    @inlinable @inline(__always)
    public func appendJSONNumber(_ value: Int64) {
        appendInPlace(maxCount: 20) { out in
            if value < 0 {
                out[0] = UInt8(ascii: "-")
                return 1 + Self.writeDecimal(value.magnitude, to: out + 1)
            }
            return Self.writeDecimal(UInt64(value), to: out)
        }
    }

    @inlinable @inline(__always)
    public func appendJSONNumber(_ value: Int) { appendJSONNumber(Int64(value)) }

    @inlinable @inline(__always)
    static func writeDecimal(_ value: UInt64, to out: UnsafeMutablePointer<UInt8>) -> Int {
        var digits = 1
        var probe = value
        while probe >= 10 { probe /= 10; digits += 1 }
        var rest = value
        var index = digits
        repeat {
            index -= 1
            out[index] = UInt8(truncatingIfNeeded: rest % 10) &+ UInt8(ascii: "0")
            rest /= 10
        } while rest != 0
        return digits
    }
}
