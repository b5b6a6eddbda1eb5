import FieldcapSystem
import Synchronization
import Testing

@testable import FieldcapV4L2

#if canImport(Glibc)
    import Glibc
#endif

/// `stamp=exposure-middle` on a camera whose exposure changes: the readings around each frame's
/// start give its exposure time, and where they differ, a bound that holds whichever was right.
@Suite("following a camera's exposure time")
struct ExposureWatchTests {
    static let ms: UInt64 = 1_000_000

    /// A watch fed by hand: readings of `units` (100 µs) taken at `atMs` (each read in 1 ms).
    static func watch(_ readings: [(atMs: UInt64, units: Int64)]) -> ExposureWatch {
        let watch = ExposureWatch(device: "/dev/video-test", unitNs: 100_000, periodNs: 33 * ms) {
            .failure(Errno(EIO))
        }
        for (at, units) in readings {
            watch.add(ExposureReading(beforeNs: at * ms, afterNs: at * ms + ms, units: units))
        }
        return watch
    }

    @Test("a fixed exposure: its time, nothing added to the bound")
    func fixed() throws {
        let watch = Self.watch([(0, 50), (16, 50), (33, 50), (50, 50)])
        let found = try #require(watch.exposure(startingAt: 20 * Self.ms))
        #expect(found.timeNs == 5 * Self.ms && found.halfSpreadNs == 0)
        #expect(watch.figures.readings == 4 && watch.figures.changes == 0 && watch.figures.framesAtAChange == 0)
    }

    @Test("a change between the readings around a frame's start: halfway, the bound covering both")
    func atAChange() throws {
        let watch = Self.watch([(0, 50), (16, 50), (33, 120), (50, 120)])
        // The frame began at 20 ms: 5 ms before it, 12 ms after.
        let found = try #require(watch.exposure(startingAt: 20 * Self.ms))
        #expect(found.timeNs == 8_500_000 && found.halfSpreadNs == 3_500_000)
        // Either truth lies within the bound the camera adds: a quarter of the difference.
        for truth in [5 * Self.ms, 12 * Self.ms] {
            let middle = Int64(found.timeNs / 2), bound = Int64(found.halfSpreadNs / 2)
            #expect(abs(Int64(truth / 2) - middle) <= bound)
        }
        // Frames after the change have it, exactly.
        #expect(try #require(watch.exposure(startingAt: 40 * Self.ms)).timeNs == 12 * Self.ms)
        #expect(watch.figures.changes == 1 && watch.figures.framesAtAChange == 1)
        #expect(watch.figures.minimumNs == 5 * Self.ms && watch.figures.maximumNs == 12 * Self.ms)
    }

    @Test("no reading after a frame's start yet: the last one, its bound the spread the readings kept")
    func aheadOfTheReadings() throws {
        let watch = Self.watch([(0, 80), (16, 50), (33, 120)])
        let found = try #require(watch.exposure(startingAt: 40 * Self.ms))
        #expect(found.timeNs == 12 * Self.ms && found.halfSpreadNs == 3_500_000)
        #expect(watch.figures.framesAheadOfReadings == 1)
        // Nothing read yet: nothing to say.
        #expect(Self.watch([]).exposure(startingAt: 40 * Self.ms) == nil)
    }

    @Test("failed readings are counted and left out; readings older than two seconds are let go")
    func failuresAndAge() throws {
        let watch = Self.watch([(0, 300), (16, -1), (3_000, 50), (3_016, -1), (3_033, 50)])
        let found = try #require(watch.exposure(startingAt: 3_020 * Self.ms))
        #expect(found.timeNs == 5 * Self.ms && found.halfSpreadNs == 0)
        #expect(watch.figures.readings == 5 && watch.figures.failures == 2)
        // The 30 ms reading of 0 s was let go: a frame at 3.04 s ahead of the readings has no
        // spread from it.
        #expect(try #require(watch.exposure(startingAt: 3_040 * Self.ms)).halfSpreadNs == 0)
    }

    @Test("its own thread reads the control until finished, the first reading before start returns")
    func thread() throws {
        let units = Atomic<Int64>(50)
        let reads = Atomic<Int>(0)
        let watch = ExposureWatch(device: "/dev/video-test", unitNs: 100_000, periodNs: 10 * Self.ms) {
            reads.add(1, ordering: .relaxed)
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
        #expect(watch.exposure(startingAt: 0) != nil)
        #expect(watch.figures.changes == 1, "\(watch.figures)")
        #expect(watch.figures.readings == after)
    }
}
