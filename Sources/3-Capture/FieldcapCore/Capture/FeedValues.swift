import SyncField

/// The values of a stream another program feeds, handed from the feed's reader thread to the
/// writer by slot, as a camera hands over frames by buffer.
///
/// A fed record's channels are whatever the program sent (nested, any size), too much for a
/// fixed `CaptureRecord`: the reader parses a line into a free slot and pushes a record naming
/// the slot (`bufferIndex`); the writer takes the values out and hands the slot back. A feed
/// with every slot out (its writer behind) loses its own next record, as a camera with every
/// buffer out loses its next frame.
///
/// Thread-safe for one reader and one writer: `takeSlot` and `store` from the reader, `take`
/// and `release` from the writer. A slot's values cross with the record through the ring
/// (whose push publishes and whose consume acquires), and come back through `free`, an SPSC
/// ring the other way.
public final class FeedValues: @unchecked Sendable {
    public let slots: Int
    private let values: UnsafeMutablePointer<[String: ChannelValue]>
    private let free: SPSCRing<Int32>

    public init(slots: Int) {
        precondition(slots > 0, "a feed needs a slot")
        self.slots = slots
        values = .allocate(capacity: slots)
        values.initialize(repeating: [:], count: slots)
        free = SPSCRing(minimumCapacity: slots)
        // Before either thread runs: starting them publishes these.
        for slot in 0..<slots { _ = free.tryPush(Int32(slot)) }
    }

    deinit {
        values.deinitialize(count: slots)
        values.deallocate()
    }

    /// A slot to parse the next record into; nil while every slot is out. Reader-bound.
    public func takeSlot() -> Int32? { free.pop() }

    /// Puts a record's channels in `slot`, before the record naming it is pushed. Reader-bound.
    public func store(_ channels: [String: ChannelValue], in slot: Int32) {
        precondition(slot >= 0 && Int(slot) < slots, "feed slot \(slot) out of range")
        values[Int(slot)] = channels
    }

    /// Moves the channels out of `slot`. Writer-bound, between the record's consume and `release`.
    public func take(_ slot: Int32) -> [String: ChannelValue] {
        precondition(slot >= 0 && Int(slot) < slots, "feed slot \(slot) out of range")
        let channels = values[Int(slot)]
        values[Int(slot)] = [:]
        return channels
    }

    /// The channels in `slot`, left there (a live viewer's copy, before `take`). Writer-bound.
    public func peek(_ slot: Int32) -> [String: ChannelValue]? {
        guard slot >= 0 && Int(slot) < slots else { return nil }
        return values[Int(slot)]
    }

    /// Hands `slot` back to the reader. Writer-bound.
    public func release(_ slot: Int32) {
        let pushed = free.tryPush(slot)
        precondition(pushed, "feed slot \(slot) released twice")
    }
}

extension FeedValues: Equatable {
    /// The same slots: a descriptor is equal to its copies.
    public static func == (lhs: FeedValues, rhs: FeedValues) -> Bool { lhs === rhs }
}
