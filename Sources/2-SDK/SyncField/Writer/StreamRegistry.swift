import Synchronization

/// What the session knows about one stream id. Created once per id per session and never freed
/// before the session, so callers can hold it without reference counting.
///
/// Thread-safe: the epochs are atomics; the descriptors and the layout are written under the
/// session lock before the epoch that announces them is stored (release), and read by the writer
/// only after an entry published later (acquire).
final class StreamState: @unchecked Sendable {
    let index: Int
    let id: String
    /// The run whose `{id}.timestamps.jsonl` is open, or -1.
    let timestampsEpoch = Atomic<Int>(-1)
    /// The run whose `{id}.jsonl` is open, or -1.
    let sensorEpoch = Atomic<Int>(-1)
    var timestampsFD: Int32 = -1
    var sensorFD: Int32 = -1
    /// Set when a fixed-shape `SensorStream` is made for this id; never changes afterwards.
    var fixedLayout: FixedChannelLayout?

    init(index: Int, id: String) {
        self.index = index
        self.id = id
    }
}

/// Stream ids to their states, readable by any thread without a lock.
///
/// The current table is an immutable snapshot behind one atomic pointer. A new id copies the
/// table under the session lock and publishes the copy; old snapshots stay alive with the
/// registry (they are few: one per new id), so a reader never needs a reference count.
final class StreamRegistry: @unchecked Sendable {
    final class Table {
        let byId: [String: StreamState]
        let all: [StreamState]
        init(byId: [String: StreamState], all: [StreamState]) { self.byId = byId; self.all = all }
    }

    private let current: Atomic<UnsafeRawPointer>
    /// Every table ever published; guarded by the session lock.
    private var tables: [Table]

    init() {
        let empty = Table(byId: [:], all: [])
        tables = [empty]
        current = Atomic(UnsafeRawPointer(Unmanaged.passUnretained(empty).toOpaque()))
    }

    @inline(__always)
    var table: Table {
        Unmanaged<Table>.fromOpaque(current.load(ordering: .acquiring)).takeUnretainedValue()
    }

    @inline(__always)
    func lookup(_ id: String) -> StreamState? { table.byId[id] }

    /// Adds `id`. Call with the session lock held.
    func add(_ id: String) -> StreamState {
        let old = table
        if let existing = old.byId[id] { return existing }
        let state = StreamState(index: old.all.count, id: id)
        var byId = old.byId
        byId[id] = state
        let new = Table(byId: byId, all: old.all + [state])
        tables.append(new)
        current.store(UnsafeRawPointer(Unmanaged.passUnretained(new).toOpaque()), ordering: .releasing)
        return state
    }
}
