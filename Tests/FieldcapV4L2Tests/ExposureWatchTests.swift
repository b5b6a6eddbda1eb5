import FieldcapSystem
import Synchronization
import Testing

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// `stamp=exposure-middle` on a camera whose exposure changes: the readings around each frame's
/// start give its exposure time, and where they do not tell it, a bound that holds whatever the
/// camera chose.
@Suite("following a camera's exposure time")
struct ExposureWatchTests {
    static let ms: UInt64 = 1_000_000

    /// A watch fed by hand (reading every 16 ms): readings of `units` (100 µs) taken at `atMs`,
    /// each read in 1 ms (a USB transfer), or in 5 µs (`cached`). The control allows 1...10000.
    static func watch(
        _ readings: [(atMs: UInt64, units: Int64)], auto: Bool = true, cached: Bool = false
    )
        -> ExposureWatch
    {
        let watch = ExposureWatch(
            device: "/dev/video-test", unitNs: 100_000, periodNs: 33 * ms, isAuto: auto, range: 1...10_000
        ) { .failure(Errno(EIO)) }
        for (at, units) in readings {
            watch.add(ExposureReading(beforeNs: at * ms, afterNs: at * ms + (cached ? 5_000 : ms), units: units))
        }
        return watch
    }

    /// Whether the middle the watch gives for a frame (half its time, give or take half its
    /// half-spread, as the camera adds it) holds the middle of a `truth`-long exposure.
    static func holds(_ found: (timeNs: UInt64, halfSpreadNs: UInt64), truth units: Int64) -> Bool {
        let middle = Int64(found.timeNs / 2)
        return abs(units * 50_000 - middle) <= Int64(found.halfSpreadNs / 2)
    }

    @Test("a fixed exposure: its time, nothing added to the bound")
    func fixed() throws {
        let watch = Self.watch([(0, 50), (16, 50), (33, 50), (50, 50)])
        let found = watch.exposure(startingAt: 20 * Self.ms)
        #expect(found.timeNs == 5 * Self.ms && found.halfSpreadNs == 0)
        #expect(watch.figures.readings == 4 && watch.figures.changes == 0 && watch.figures.framesAtAChange == 0)
    }

    @Test("a change between the readings around a frame's start: halfway, the bound holding both")
    func atAChange() throws {
        let watch = Self.watch([(0, 50), (16, 50), (33, 120), (50, 120)])
        // The frame began at 20 ms: 5 ms before it, 12 ms after.
        let found = watch.exposure(startingAt: 20 * Self.ms)
        #expect(found.timeNs == 8_500_000 && found.halfSpreadNs == 3_500_000)
        #expect(Self.holds(found, truth: 50) && Self.holds(found, truth: 120))
        #expect(!Self.holds(found, truth: 200))
        // Frames after the change have it, exactly.
        #expect(watch.exposure(startingAt: 40 * Self.ms).timeNs == 12 * Self.ms)
        #expect(watch.figures.changes == 1 && watch.figures.framesAtAChange == 1)
        #expect(watch.figures.minimumNs == 5 * Self.ms && watch.figures.maximumNs == 12 * Self.ms)
    }

    @Test(
        """
        no fresh reading on one side of a frame's start: on auto exposure whatever the control \
        allows; when fixed the span of the readings kept
        """)
    func aheadOfTheReadings() throws {
        // Auto: nothing read after 40 ms yet; the camera may have chosen anything.
        let auto = Self.watch([(0, 80), (16, 50), (33, 120)])
        let found = auto.exposure(startingAt: 40 * Self.ms)
        for truth: Int64 in [1, 50, 120, 10_000] { #expect(Self.holds(found, truth: truth)) }
        #expect(auto.figures.framesAheadOfReadings == 1)
        // Readings around the start but far apart (the watch stalled for a second): not trusted.
        let stalled = Self.watch([(0, 50), (1_000, 50)])
        #expect(Self.holds(stalled.exposure(startingAt: 500 * Self.ms), truth: 9_000))
        // Fixed: only a program could have set it; the values read are what it can be.
        let fixed = Self.watch([(0, 80), (16, 50), (33, 120)], auto: false)
        let kept = fixed.exposure(startingAt: 40 * Self.ms)
        for truth: Int64 in [50, 80, 120] { #expect(Self.holds(kept, truth: truth)) }
        #expect(kept.timeNs == 8_500_000 && kept.halfSpreadNs == 3_500_000)
        // Nothing read at all: what the control allows.
        #expect(Self.holds(Self.watch([]).exposure(startingAt: 40 * Self.ms), truth: 10_000))
    }

    @Test("uvcvideo answering from its cache on auto exposure: the values read are not trusted")
    func cachedReadings() throws {
        let watch = Self.watch((0..<12).map { (UInt64($0) * 16, 50) }, cached: true)
        let found = watch.exposure(startingAt: 100 * Self.ms)
        #expect(watch.readsFromCache)
        #expect(Self.holds(found, truth: 300) && found.halfSpreadNs > 400 * Self.ms)
        #expect(watch.figures.cachedReadings == 12)
        // Fixed, the cached value is the one set: kept.
        let fixed = Self.watch((0..<12).map { (UInt64($0) * 16, 50) }, auto: false, cached: true)
        #expect(!fixed.readsFromCache && fixed.exposure(startingAt: 100 * Self.ms).halfSpreadNs == 0)
    }

    @Test("failed readings are counted and left out; readings older than two seconds are let go")
    func failuresAndAge() throws {
        let watch = Self.watch([(0, 300), (16, -1), (3_000, 50), (3_016, -1), (3_033, 50)], auto: false)
        let found = watch.exposure(startingAt: 3_020 * Self.ms)
        #expect(found.timeNs == 5 * Self.ms && found.halfSpreadNs == 0)
        #expect(watch.figures.readings == 5 && watch.figures.failures == 2)
        // The reading of 30 ms at 0 s was let go: a frame at 3.04 s with nothing read after it
        // takes the span of what was kept, 5 ms only.
        #expect(watch.exposure(startingAt: 3_040 * Self.ms).halfSpreadNs == 0)
    }

    @Test("its own thread reads the control until finished, the first reading before start returns")
    func thread() throws {
        let units = Atomic<Int64>(50)
        let reads = Atomic<Int>(0)
        let watch = ExposureWatch(
            device: "/dev/video-test", unitNs: 100_000, periodNs: 10 * Self.ms, isAuto: true, range: 1...10_000
        ) {
            reads.add(1, ordering: .relaxed)
            usleep(200)  // a USB transfer's time, at least
            return .success(units.load(ordering: .relaxed))
        }
        watch.start()
        #expect(reads.load(ordering: .relaxed) >= 1)
        usleep(60_000)
        units.store(70, ordering: .relaxed)
        usleep(60_000)
        watch.finish()
        let after = reads.load(ordering: .relaxed)
        usleep(30_000)
        #expect(reads.load(ordering: .relaxed) == after, "no reading after finish")
        _ = watch.exposure(startingAt: 0)
        #expect(watch.figures.changes == 1, "\(watch.figures)")
        #expect(watch.figures.readings == after)
    }
}
