import SyncField

/// Where the writer thread puts records. Writer-thread-bound.
public protocol RecordSink: AnyObject {
    /// Prepares the outputs of `streams` (indices match the records' stream index).
    func open(streams: [StreamDescriptor]) throws
    /// Writes one record of stream `stream`; `frameNumber` is its index in that stream's output;
    /// `frame` holds a video record's bytes (read in place, valid during the call).
    func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws
    /// Makes what was written so far durable. The writer calls it at least once per
    /// `Recorder.Options.syncIntervalNs`.
    func sync() throws
    /// Finishes every output. Returns the records written per stream id.
    func close() throws -> [String: Int]
}

extension RecordSink {
    /// Sinks whose outputs sync themselves (a `SyncSession` does, on its own writer) need nothing.
    public func sync() throws {}
}

/// Writes records into a SyncField session: sensor records through allocation-free
/// `SensorStream`s, frame records as timestamp lines.
public final class SyncSessionSink: RecordSink {
    public let session: SyncSession
    private var descriptors: [StreamDescriptor] = []
    private var sensors: [SensorStream?] = []

    public init(session: SyncSession) { self.session = session }

    public func open(streams: [StreamDescriptor]) throws {
        descriptors = streams
        sensors = try streams.map { descriptor in
            descriptor.kind == .sensor ? try session.sensorStream(descriptor.id, channels: descriptor.channels) : nil
        }
    }

    public func write(_ record: CaptureRecord, frame: UnsafeRawBufferPointer?, stream: Int, frameNumber: Int) throws {
        if let sensor = sensors[stream] {
            let count = Int(record.valueCount)
            let values = record.values
            try values.span.withUnsafeBufferPointer { all in
                _ = try sensor.record(
                    frameNumber: frameNumber, values: UnsafeBufferPointer(rebasing: all[0..<count]),
                    uncertaintyNs: record.uncertaintyNs, captureNs: record.captureNs)
            }
        } else {
            try session.stamp(
                descriptors[stream].id, frameNumber: frameNumber, uncertaintyNs: record.uncertaintyNs,
                captureNs: record.captureNs)
        }
    }

    public func close() throws -> [String: Int] {
        try session.stop()
    }
}
