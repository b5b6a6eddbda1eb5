import FieldcapCore
import FieldcapSystem
import SyncField
import Synchronization

/// A reading of the camera's exposure time: `CLOCK_MONOTONIC_RAW` just before and just after the
/// control was read (the camera answered in between), and the value in the control's units.
struct ExposureReading: BitwiseCopyable {
    var beforeNs: UInt64
    var afterNs: UInt64
    var units: Int64
}

/// Follows a camera's exposure time while it records, for `stamp=exposure-middle`: a camera on
/// auto exposure chooses each frame's, and nothing in a UVC frame says which it chose. A thread of
/// its own reads `exposure_time_absolute` twice a frame period on auto exposure, once a second
/// when fixed (a UVC camera answers over USB, in milliseconds, or seconds when in trouble: the
/// capture loop never waits for it), into a ring; the capture thread takes the readings when it
/// stamps a frame and places the frame's exposure between the last reading before its start and
/// the first after it.
///
/// Every frame gets an exposure time and a half-spread such that the true time lies within it:
/// where the two readings agree, exactly; where they differ (the exposure changed around the
/// frame), halfway between them; where one side has no fresh reading (the watch a step behind,
/// stalled, failing, or `uvcvideo` answering from its cache), on auto exposure the whole `range`
/// (what the control allows, up to two frame periods: the camera's owner says), and when fixed the
/// range the kept readings span.
///
/// Thread-safe as used: `start`/`finish` by the camera's owner, the rest on the capture thread.
final class ExposureWatch: @unchecked Sendable {
    /// What the sidecar says of the exposure followed.
    struct Figures: Sendable {
        var readings = 0
        var failures = 0
        /// Times the value read differed from the one before.
        var changes = 0
        var minimumNs: UInt64 = .max
        var maximumNs: UInt64 = 0
        /// Frames whose exposure changed around them (their bound widened), and frames with no
        /// fresh reading on one side of their start (their bound widened to what could be).
        var framesAtAChange = 0
        var framesAheadOfReadings = 0
        var lastError: Errno?
        /// Readings answered in under 20 µs: no USB transfer is that quick, so `uvcvideo` answered
        /// from its cache (a camera that does not mark the control auto-update is asked once).
        var cachedReadings = 0
    }

    let device: String
    /// Nanoseconds per control unit (V4L2's `exposure_time_absolute`: 100 µs).
    let unitNs: UInt64
    /// The camera chooses its exposure (auto exposure): a value not read around a frame can be
    /// anything in `range`.
    let isAuto: Bool
    /// What an exposure not read can be, in the control's units.
    let range: ClosedRange<Int64>
    private let read: @Sendable () -> Result<Int64, Errno>
    private let intervalMs: Int32
    /// A reading further than this from a frame's start says nothing of its exposure (on auto
    /// exposure): four reading intervals, so one late reading is still used.
    private let freshNs: UInt64
    private let ring = SPSCRing<ExposureReading>(minimumCapacity: 256)
    private let stop = StopSignal()
    private var thread: DedicatedThread?
    /// The errno of the newest failed read, for the sidecar.
    private let failure = Atomic<Int32>(0)
    /// The usable readings of the last `keptNs`, oldest first: the capture thread's own copy.
    private var history: [ExposureReading] = []
    private(set) var figures = Figures()
    /// Readings older than this before a frame's start are let go.
    static let keptNs: UInt64 = 2_000_000_000
    /// A read that took less than this was no USB transfer.
    static let cachedReadNs: UInt64 = 20_000

    /// `read`: one reading of the control, from the watch's thread. `periodNs`: how often to read
    /// it, twice; `range`: what the control allows.
    init(
        device: String, unitNs: UInt64, periodNs: UInt64, isAuto: Bool, range: ClosedRange<Int64>,
        read: @escaping @Sendable () -> Result<Int64, Errno>
    ) {
        self.device = device
        self.unitNs = unitNs
        self.isAuto = isAuto
        self.range = max(0, range.lowerBound)...max(0, range.upperBound)
        self.read = read
        intervalMs = Int32(max(5, min(1_000, periodNs / 2_000_000)))
        freshNs = UInt64(intervalMs) * 4_000_000
        history.reserveCapacity(1_024)
    }

    deinit { finish() }

    /// Takes a first reading and starts the watch's thread: before the camera streams, so the
    /// first frame has a reading before its start.
    func start() {
        guard thread == nil else { return }
        take()
        thread = DedicatedThread(name: "fc-exposure") { [self] in
            while !stop.wait(milliseconds: intervalMs) { take() }
        }
    }

    /// Stops reading and waits for the thread.
    func finish() {
        stop.request()
        thread?.join()
        thread = nil
    }

    private func take() {
        let before = MonotonicClock.now()
        let value = read()
        let after = MonotonicClock.now()
        // A failed read is a reading of nothing: the units say so (-1), the figures count it.
        let units = (try? value.get()) ?? -1
        if case .failure(let error) = value { failure.store(error.rawValue, ordering: .relaxed) }
        add(ExposureReading(beforeNs: before, afterNs: after, units: units))
    }

    /// A reading, from the watch's thread (or a test playing it).
    func add(_ reading: ExposureReading) { _ = ring.push(reading) }

    /// Capture thread: whether a reading was taken after `startNs` (the frame's exposure time is
    /// then known on both sides of its start).
    func hasReading(after startNs: UInt64) -> Bool {
        takeReadings(before: startNs)
        return history.last.map { $0.beforeNs >= startNs } ?? false
    }

    /// On auto exposure, `uvcvideo` answers from its cache, not the camera: the values read say
    /// nothing of what the camera chose.
    var readsFromCache: Bool {
        isAuto && figures.readings >= 10 && figures.cachedReadings * 10 >= figures.readings * 9
    }

    /// Capture thread: the exposure of a frame whose exposure started at `startNs`
    /// (`CLOCK_MONOTONIC_RAW`): a time and how far the true one may be from it (`halfSpreadNs`).
    /// Allocates nothing.
    func exposure(startingAt startNs: UInt64) -> (timeNs: UInt64, halfSpreadNs: UInt64) {
        takeReadings(before: startNs)
        var before: ExposureReading?
        var after: ExposureReading?
        for reading in history {
            if reading.afterNs <= startNs { before = reading }
            if reading.beforeNs >= startNs && after == nil { after = reading }
        }
        if !readsFromCache, let before, let after, isFresh(startNs - before.afterNs),
            isFresh(after.beforeNs - startNs)
        {
            if before.units != after.units { figures.framesAtAChange += 1 }
            return spread(min(before.units, after.units), max(before.units, after.units))
        }
        figures.framesAheadOfReadings += 1
        // On auto exposure the camera may have chosen anything since the last reading.
        if isAuto || history.isEmpty { return spread(range.lowerBound, range.upperBound) }
        var low = Int64.max
        var high = Int64.min
        for reading in history {
            low = min(low, reading.units)
            high = max(high, reading.units)
        }
        return spread(low, high)
    }

    /// Whether a reading this far from a frame's start tells its exposure: any when fixed.
    private func isFresh(_ gapNs: UInt64) -> Bool { !isAuto || gapNs <= freshNs }

    /// The middle of `low...high` (in units) and half its width, in nanoseconds.
    private func spread(_ low: Int64, _ high: Int64) -> (timeNs: UInt64, halfSpreadNs: UInt64) {
        let lowNs = UInt64(max(0, low)) * unitNs
        let highNs = UInt64(max(0, high)) * unitNs
        return ((lowNs + highNs) / 2, (highNs - lowNs) / 2)
    }

    /// Moves the ring's readings into the history, counting them, and lets go of readings older
    /// than `keptNs` before `startNs`.
    private func takeReadings(before startNs: UInt64) {
        while let reading = ring.pop() {
            figures.readings += 1
            guard reading.units >= 0 else {
                figures.failures += 1
                continue
            }
            if reading.afterNs &- reading.beforeNs < Self.cachedReadNs { figures.cachedReadings += 1 }
            let ns = UInt64(reading.units) * unitNs
            if let last = history.last, last.units != reading.units { figures.changes += 1 }
            figures.minimumNs = min(figures.minimumNs, ns)
            figures.maximumNs = max(figures.maximumNs, ns)
            history.append(reading)
        }
        let error = failure.load(ordering: .relaxed)
        if error != 0 { figures.lastError = Errno(error) }
        if startNs > Self.keptNs {
            let oldest = startNs - Self.keptNs
            // All older than the window go, but the newest of all stays: the value last known.
            if let last = history.lastIndex(where: { $0.afterNs < oldest }) {
                history.removeFirst(min(last + 1, history.count - 1))
            }
        }
    }
}
