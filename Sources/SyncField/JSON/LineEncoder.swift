/// Writes timestamp and sensor lines byte for byte as the SDK does.
///
/// The keys of both lines are fixed, so everything but the numbers and the channels is
/// encoded once per session:
///
///     {"capture_ns":N,"clock_domain":"H","clock_source":"host_monotonic","frame_number":F,"uncertainty_ns":U}\n
///     {"capture_ns":N,"channels":{...},"clock_domain":"H",...same...}\n
///
/// Thread-bound (writer).
struct LineEncoder {
    /// `,"clock_domain":"H","clock_source":"host_monotonic","frame_number":`
    let middle: [UInt8]

    init(hostId: String, clockSource: String = syncFieldClockSource) {
        middle = Array(#","clock_domain":"#.utf8) + ByteBuffer.jsonStringLiteral(hostId)
            + Array(#","clock_source":"#.utf8) + ByteBuffer.jsonStringLiteral(clockSource)
            + Array(#","frame_number":"#.utf8)
    }

    @inline(__always)
    func appendTimestampLine(to out: ByteBuffer, captureNs: UInt64, frameNumber: Int, uncertaintyNs: UInt64) {
        out.append(#"{"capture_ns":"#)
        out.appendJSONNumber(captureNs)
        appendTail(to: out, frameNumber: frameNumber, uncertaintyNs: uncertaintyNs)
    }

    /// Starts a sensor line up to and including `"channels":`; the caller appends the channels
    /// object and then calls `appendTail`.
    @inline(__always)
    func appendSensorHead(to out: ByteBuffer, captureNs: UInt64) {
        out.append(#"{"capture_ns":"#)
        out.appendJSONNumber(captureNs)
        out.append(#","channels":"#)
    }

    @inline(__always)
    func appendTail(to out: ByteBuffer, frameNumber: Int, uncertaintyNs: UInt64) {
        out.append(middle)
        out.appendJSONNumber(frameNumber)
        out.append(#","uncertainty_ns":"#)
        out.appendJSONNumber(uncertaintyNs)
        out.append("}\n")
    }
}
