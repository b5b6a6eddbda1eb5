import FieldcapCore
import SyncField

/// The reader's side of a fed stream's hand-off: a record's channels into a free slot, a record
/// naming the slot into the ring. A record with no slot free, or no room in the ring, is dropped
/// and counted as the ring's drop of its sequence number; never waited for.
///
/// Thread-bound (the reader's).
struct FeedHandoff {
    let values: FeedValues
    let ring: SPSCRing<CaptureRecord>
    /// Records the writer held every slot for.
    private(set) var noSlot = 0
    private var sequence: UInt64 = 0
    /// A slot taken for a record the ring then had no room for: used next.
    private var spareSlot: Int32?

    init(values: FeedValues, ring: SPSCRing<CaptureRecord>) {
        self.values = values
        self.ring = ring
    }

    /// Hands one record over, read from a line of `lineBytes`; false when it was dropped.
    @discardableResult
    mutating func push(
        _ channels: [String: ChannelValue], captureNs: UInt64, uncertaintyNs: UInt64, arrivalNs: UInt64,
        lineBytes: Int
    ) -> Bool {
        defer { sequence += 1 }
        guard let slot = spareSlot ?? values.takeSlot() else {
            noSlot += 1
            ring.drops.record(sequence)
            return false
        }
        spareSlot = nil
        values.store(channels, in: slot)
        var record = CaptureRecord()
        record.sequence = sequence
        record.dequeueNs = arrivalNs
        record.captureNs = captureNs
        record.uncertaintyNs = uncertaintyNs
        record.bufferIndex = slot
        // What the writer weighs the record by, in the session's queue (`FeedAdmission`).
        record.bytesUsed = UInt32(clamping: lineBytes)
        if ring.push(record, sequence: sequence) { return true }
        spareSlot = slot
        return false
    }
}
