import FieldcapCore

/// A sink that writes nothing: it measures each stream's timestamps (`StreamJitter`) for
/// `fieldcap bench jitter`. Camera buffers go straight back to the driver.
///
/// Thread-bound per stream while recording (the recorder writes different streams from
/// different threads; each stream's measurements live in a box of their own); read `streams`
/// after the recorder stopped.
public final class JitterSink: RecordSink {
    /// One stream's measurements, changed in place by the thread that writes the stream.
    private final class Measured {
        var jitter: StreamJitter
        init(_ jitter: StreamJitter) { self.jitter = jitter }
    }

    private var measured: [Measured] = []

    public var streams: [StreamJitter] { measured.map(\.jitter) }

    public init() {}

    public func open(streams descriptors: [StreamDescriptor]) throws {
        measured = descriptors.map { Measured(StreamJitter(id: $0.id, nominalRate: $0.nominalRate)) }
    }

    public func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) -> Bool {
        measured[stream].jitter.add(record)
        return true
    }

    public func close() throws -> [String: Int] {
        Dictionary(uniqueKeysWithValues: measured.map { ($0.jitter.id, $0.jitter.records) })
    }
}
