import FieldcapCore

/// A sink that writes nothing: it measures each stream's timestamps (`StreamJitter`) for
/// `fieldcap bench jitter`. Camera buffers go straight back to the driver.
///
/// Writer-thread-bound while recording; read `streams` after the recorder stopped.
public final class JitterSink: RecordSink {
    public private(set) var streams: [StreamJitter] = []

    public init() {}

    public func open(streams descriptors: [StreamDescriptor]) throws {
        streams = descriptors.map { StreamJitter(id: $0.id, nominalRate: $0.nominalRate) }
    }

    public func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws {
        streams[stream].add(record)
    }

    public func close() throws -> [String: Int] {
        Dictionary(uniqueKeysWithValues: streams.map { ($0.id, $0.records) })
    }
}
