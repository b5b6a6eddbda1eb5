/// A ROS 2 message in CDR, as `rmw` serializes it (the `cdr` message encoding of MCAP's ROS 2
/// profile): the 4-byte encapsulation header for little-endian plain CDR, then each field
/// aligned to its own size counted from the end of that header, strings as a `u32` length that
/// includes the terminating NUL, sequences as a `u32` count then their elements.
///
/// Appends to the caller's buffer (an MCAP chunk), so an image's bytes are copied once.
struct CDRWriter {
    private var bytes: [UInt8] = []
    private let origin: Int

    /// Appends one message to `buffer`, written by `body`.
    static func append(to buffer: inout [UInt8], _ body: (inout CDRWriter) -> Void) {
        var writer = CDRWriter(taking: &buffer)
        body(&writer)
        swap(&buffer, &writer.bytes)
    }

    /// One message on its own (tests, small messages).
    static func message(_ body: (inout CDRWriter) -> Void) -> [UInt8] {
        var bytes: [UInt8] = []
        append(to: &bytes, body)
        return bytes
    }

    /// Takes `buffer` over without copying it, and starts the message at its end.
    private init(taking buffer: inout [UInt8]) {
        swap(&bytes, &buffer)
        bytes.append(contentsOf: [0x00, 0x01, 0x00, 0x00])
        origin = bytes.count
    }

    private mutating func align(_ size: Int) {
        let misalignment = (bytes.count - origin) % size
        if misalignment != 0 { bytes.append(contentsOf: repeatElement(0, count: size - misalignment)) }
    }

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    mutating func u16(_ value: UInt16) {
        align(2)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func u32(_ value: UInt32) {
        align(4)
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }

    mutating func f64(_ value: Double) {
        align(8)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ value: String) {
        let utf8 = value.utf8
        u32(UInt32(utf8.count + 1))
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    /// `uint8[]`: count, then the bytes as they are.
    mutating func byteSequence(_ value: UnsafeRawBufferPointer) {
        u32(UInt32(value.count))
        bytes.append(contentsOf: value)
    }

    /// `float64[]`: count, then the values.
    mutating func f64Sequence(_ values: [Double]) {
        u32(UInt32(values.count))
        for value in values { f64(value) }
    }

    /// `float64[N]`: the values only (a fixed-size array has no count).
    mutating func f64Array(_ values: [Double]) {
        for value in values { f64(value) }
    }

    /// `string[]`.
    mutating func stringSequence(_ values: [String]) {
        u32(UInt32(values.count))
        for value in values { string(value) }
    }
}
