import FieldcapOutput

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
        middle =
            Array(#","clock_domain":"#.utf8) + OutputBytes.jsonStringLiteral(hostId)
            + Array(#","clock_source":"#.utf8) + OutputBytes.jsonStringLiteral(clockSource)
            + Array(#","frame_number":"#.utf8)
    }

    /// Appends a timestamp line; returns where its tail (`,"clock_domain":...`) starts in `out`.
    @inline(__always)
    @discardableResult
    func appendTimestampLine(to out: OutputBytes, captureNs: UInt64, frameNumber: Int, uncertaintyNs: UInt64) -> Int {
        out.append(#"{"capture_ns":"#)
        out.appendJSONNumber(captureNs)
        let tail = out.count
        appendTail(to: out, frameNumber: frameNumber, uncertaintyNs: uncertaintyNs)
        return tail
    }

    /// Starts the sensor line of the sample whose timestamp line `timestampLine` holds from
    /// `lineStart` on, its tail from `tail`: the two lines share their head and tail byte for
    /// byte, so those are copied rather than encoded again. The caller appends the channels
    /// object and then calls `appendSensorTail`.
    @inline(__always)
    static func appendSensorHead(to out: OutputBytes, sharing timestampLine: OutputBytes, lineStart: Int, tail: Int) {
        out.append(UnsafeBufferPointer(rebasing: timestampLine.bytes[lineStart..<tail]))
        out.append(#","channels":"#)
    }

    /// Ends a sensor line started with `appendSensorHead(to:sharing:lineStart:tail:)`.
    @inline(__always)
    static func appendSensorTail(to out: OutputBytes, sharing timestampLine: OutputBytes, tail: Int) {
        out.append(UnsafeBufferPointer(rebasing: timestampLine.bytes[tail...]))
    }

    @inline(__always)
    func appendTail(to out: OutputBytes, frameNumber: Int, uncertaintyNs: UInt64) {
        out.append(middle)
        out.appendJSONNumber(frameNumber)
        out.append(#","uncertainty_ns":"#)
        out.appendJSONNumber(uncertaintyNs)
        out.append("}\n")
    }
}
