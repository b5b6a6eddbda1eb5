/// A fixed-shape sensor stream: the same named `Double` channels in every record.
///
/// Made by `SyncSession.sensorStream(_:channels:)`. Each `record` writes exactly what
/// `SyncSession.record(_:frameNumber:channels:)` would write for the same names and values, but
/// the values travel inline through the queue and their order was worked out once: no heap
/// allocation, no sorting, no dictionary per record.
///
/// Thread-safe.
public final class SensorStream: @unchecked Sendable {
    public let id: String
    /// The channel names, in the order `record` takes values.
    public var channelNames: [String] { layout.names }

    private let session: SyncSession
    private let state: StreamState
    private let layout: FixedChannelLayout

    init(session: SyncSession, state: StreamState, layout: FixedChannelLayout) {
        self.session = session
        self.state = state
        self.layout = layout
        self.id = state.id
    }

    /// Records one sample.
    ///
    /// - Parameter values: one value per channel, in `channelNames` order; all finite.
    /// - Returns: the capture time written.
    @discardableResult
    public func record(
        frameNumber: Int, values: UnsafeBufferPointer<Double>,
        uncertaintyNs: UInt64 = syncFieldDefaultUncertaintyNs, captureNs: UInt64? = nil
    ) throws -> UInt64 {
        let ns = captureNs ?? MonotonicClock.now()
        let count = layout.names.count
        guard values.count == count else {
            throw SyncFieldError.invalidChannelLayout(
                streamId: id, reason: "record has \(values.count) values for \(count) channels")
        }
        var entry = QueueEntry(
            kind: .recordFixed, streamIndex: state.index, frameNumber: frameNumber, captureNs: ns,
            uncertaintyNs: uncertaintyNs)
        for index in 0..<count {
            let value = values[index]
            guard value.isFinite else {
                throw SyncFieldError.invalidChannelValue(
                    streamId: id, channel: layout.names[index],
                    reason: "is \(value); JSON cannot represent NaN or infinity")
            }
            entry.values[index] = value
        }
        let run = session.currentRun
        try session.openFixed(state, run: run)
        try session.enqueue(run: run, entry, channels: nil)
        return ns
    }

    /// Records one sample from an array (pass a reused array to keep the call allocation-free).
    @discardableResult
    public func record(
        frameNumber: Int, values: [Double], uncertaintyNs: UInt64 = syncFieldDefaultUncertaintyNs,
        captureNs: UInt64? = nil
    ) throws -> UInt64 {
        try values.withUnsafeBufferPointer {
            try record(frameNumber: frameNumber, values: $0, uncertaintyNs: uncertaintyNs, captureNs: captureNs)
        }
    }
}
