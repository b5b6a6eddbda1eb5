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
/// its own reads `exposure_time_absolute` twice a frame period (a UVC camera answers over USB, in
/// milliseconds, or seconds when in trouble: the capture thread never waits for it) into a ring;
/// the capture thread takes the readings when it stamps a frame, and places the frame's exposure
/// between the last reading before its start and the first after it. Where those two differ the
/// exposure changed around the frame: its middle is put halfway between the two candidates, with
/// half their distance added to its bound.
///
/// Thread-safe as used: `start`/`finish` by the camera's owner, `exposure(startingAt:)` and the
/// figures on the capture thread.
final class ExposureWatch: @unchecked Sendable {
    /// What the sidecar says of the exposure followed.
    struct Figures: Sendable {
        var readings = 0
        var failures = 0
        /// Times the value read differed from the one before.
        var changes = 0
        var minimumNs: UInt64 = .max
        var maximumNs: UInt64 = 0
        /// Frames whose exposure changed around them (their bound widened), and frames stamped
        /// with no reading after their start yet (the last value taken, its bound widened by the
        /// spread the last second saw).
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
    private let read: @Sendable () -> Result<Int64, Errno>
    private let intervalMs: Int32
    private let ring = SPSCRing<ExposureReading>(minimumCapacity: 256)
    private let stop = StopSignal()
    private var thread: DedicatedThread?
    /// The errno of the newest failed read, for the sidecar.
    private let failure = Atomic<Int32>(0)
    /// The newest readings, oldest first: the capture thread's own copy.
    private var history: [ExposureReading] = []
    private(set) var figures = Figures()
    /// Readings older than this before the newest are let go.
    static let keptNs: UInt64 = 2_000_000_000

    /// `read`: one reading of the control, from the watch's thread.
    init(device: String, unitNs: UInt64, periodNs: UInt64, read: @escaping @Sendable () -> Result<Int64, Errno>) {
        self.device = device
        self.unitNs = unitNs
        self.read = read
        intervalMs = Int32(max(5, min(1_000, periodNs / 2_000_000)))
    }

    deinit { finish() }

    /// Starts reading. The first reading is taken before this returns, so the first frame has
    /// one before its start.
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
        takeReadings()
        return history.last.map { $0.beforeNs >= startNs } ?? false
    }

    /// Capture thread: the exposure of a frame whose exposure started at `startNs`
    /// (`CLOCK_MONOTONIC_RAW`): its length and how far the middle may be from half of it
    /// (`halfSpreadNs`); nil before any reading.
    func exposure(startingAt startNs: UInt64) -> (timeNs: UInt64, halfSpreadNs: UInt64)? {
        takeReadings()
        var before: ExposureReading?
        var after: ExposureReading?
        for reading in history where reading.units >= 0 {
            if reading.afterNs <= startNs { before = reading }
            if reading.beforeNs >= startNs && after == nil { after = reading }
        }
        switch (before, after) {
        case (nil, nil):
            return nil
        case (let only?, nil), (nil, let only?):
            // No reading on one side (the watch is a step behind, or the frame came before the
            // first): the one there is, its bound the spread of what the last readings saw.
            figures.framesAheadOfReadings += 1
            let values = history.filter { $0.units >= 0 }.map(\.units)
            let spread = UInt64(values.max()! - values.min()!) * unitNs
            return (UInt64(only.units) * unitNs, spread / 2)
        case (let earlier?, let later?):
            let low = UInt64(min(earlier.units, later.units)) * unitNs
            let high = UInt64(max(earlier.units, later.units)) * unitNs
            if high != low { figures.framesAtAChange += 1 }
            return ((low + high) / 2, (high - low) / 2)
        }
    }

    private func takeReadings() {
        while let reading = ring.pop() {
            figures.readings += 1
            guard reading.units >= 0 else {
                figures.failures += 1
                continue
            }
            let ns = UInt64(reading.units) * unitNs
            if reading.afterNs &- reading.beforeNs < 20_000 { figures.cachedReadings += 1 }
            if let last = history.last(where: { $0.units >= 0 }), last.units != reading.units { figures.changes += 1 }
            figures.minimumNs = min(figures.minimumNs, ns)
            figures.maximumNs = max(figures.maximumNs, ns)
            history.append(reading)
        }
        let error = failure.load(ordering: .relaxed)
        if error != 0 { figures.lastError = Errno(error) }
        if let newest = history.last?.afterNs {
            history.removeAll { newest - $0.afterNs > Self.keptNs }
        }
    }
}
