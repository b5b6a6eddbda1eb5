import Testing

@testable import FieldcapCore
@testable import FieldcapSyncCheck

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The camera–IMU offset, measured from a synthetic recording with a known delay")
struct OffsetEstimatorTests {
    /// Seconds: the accuracy these deterministic recordings are held to. Well inside the search's
    /// 1 ms grid, so an estimate without the parabola's refinement (off by up to half a step, 0.3
    /// and 0.5 ms at the delays below) fails, as does one that returns 0 or another sign.
    static let tolerance = 0.00025

    @Test(
        "image alignment finds the delay within 0.25 ms, on and off the search's 1 ms grid",
        arguments: [
            (30.0, -0.020), (30, 0), (30, 0.0075), (30, 0.0073), (60, -0.020), (60, 0), (60, 0.0075), (60, 0.0073),
        ])
    func findsTheDelay(fps: Double, delay: Double) throws {
        let recording = SyntheticRecording(fps: fps, delay: delay)
        let estimate = try OffsetEstimator.estimate(
            camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        let error = abs(estimate.offset - delay)
        #expect(error <= Self.tolerance, "\(fps) fps, delay \(delay * 1000) ms: found \(estimate.offset * 1000) ms")
        #expect(estimate.peakCorrelation > 0.9)
        #expect(estimate.confidence > 0.5)
        #expect(estimate.excludedPairs == 0)
        #expect(abs(estimate.turnScale - 1) < 0.05, "the scene's own focal length: \(estimate.turnScale)")
    }

    @Test(
        "frames whose brightness flickers by ±3% (auto-exposure, mains) still give the delay",
        arguments: [0.0075, -0.020])
    func withstandsFlicker(delay: Double) throws {
        var recording = SyntheticRecording(fps: 30, delay: delay)
        recording.flicker = 0.03
        let estimate = try OffsetEstimator.estimate(
            camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        #expect(abs(estimate.offset - delay) <= Self.tolerance, "found \(estimate.offset * 1000) ms")
    }

    @Test(
        """
        frame pairs across lost frames are left out, not read as one period; so are those whose \
        interval at any offset searched spans a gap in the gyroscope
        """)
    func leavesOutGaps() throws {
        var lost = SyntheticRecording(fps: 30, delay: 0.0075)
        // One frame lost, then ten in a row (a camera away for a third of a second).
        lost.lostFrames = Set([30] + Array(60..<70))
        let camera = lost.camera()
        #expect(camera.pairs.count == 120 - 11 - 1)
        let estimate = try OffsetEstimator.estimate(
            camera: camera, gyro: lost.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        // Every frame pair the gyroscope covers at ±0.3 s (frames 9 to 102), less the two that
        // span a loss.
        #expect(estimate.excludedPairs == 2, "\(estimate.excludedPairs)")
        #expect(abs(estimate.offset - 0.0075) <= Self.tolerance, "found \(estimate.offset * 1000) ms")

        var gap = SyntheticRecording(fps: 30, delay: 0.0075)
        gap.gyroGap = 2.0..<2.2
        let gapped = try OffsetEstimator.estimate(
            camera: gap.camera(), gyro: gap.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        // The pairs that end after 1.7 s or start before 2.5 s: within the search of the gap.
        let expected = gap.camera().pairs.filter {
            $0.start - 0.3 >= gap.origin - 0.5 && $0.end + 0.3 <= gap.origin + gap.seconds + 0.5
                && ($0.end + 0.3 <= gap.origin + 2.0 - 1 / gap.gyroRate || $0.start - 0.3 >= gap.origin + 2.2)
        }
        #expect(gapped.pairs == expected.count, "\(gapped.pairs) pairs, \(gapped.excludedPairs) left out")
        #expect(abs(gapped.offset - 0.0075) <= Self.tolerance, "found \(gapped.offset * 1000) ms")
    }

    @Test("a still rig is refused, naming what to do")
    func refusesAStillRig() {
        let recording = SyntheticRecording(fps: 30, delay: 0, seconds: 2, motion: .still)
        for method in OffsetMethod.allCases {
            #expect {
                try OffsetEstimator.estimate(camera: recording.camera(), gyro: recording.gyro(), method: method)
            } throws: { error in
                let refusal = error as? SyncCheckRefusal
                return refusal?.reason == .stillRig && refusal?.message.contains("by hand") == true
            }
        }
    }

    @Test("a still rig whose gyroscope reads a bias of 0.2 rad/s is still refused: the bias is no turning")
    func refusesAStillRigDespiteBias() {
        var recording = SyntheticRecording(fps: 30, delay: 0, seconds: 2, motion: .still)
        recording.gyroBias = SIMD3(0.2, -0.15, 0.1)
        #expect {
            try OffsetEstimator.estimate(camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment)
        } throws: { ($0 as? SyncCheckRefusal)?.reason == .stillRig }
    }

    @Test("a rig turned back and forth at one pace is refused as ambiguous: every period matches as well")
    func refusesPeriodicMotion() {
        // One sinusoid per axis, all at 4 Hz: the motion repeats every 0.25 s, inside the search.
        let periodic = HandMotion(axes: [
            [.init(amplitude: 1, frequency: 4, phase: 0)], [.init(amplitude: 0.8, frequency: 4, phase: 1)],
            [.init(amplitude: 0.5, frequency: 4, phase: 2)],
        ])
        var recording = SyntheticRecording(fps: 30, delay: 0, motion: periodic)
        recording.gyroNoise = 0
        #expect {
            try OffsetEstimator.estimate(
                camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.4)
        } throws: { error in
            let refusal = error as? SyncCheckRefusal
            return refusal?.reason == .ambiguous && refusal?.message.contains("irregularly") == true
        }
    }

    @Test("a delay beyond the search (--max-offset) is refused as out of range, saying to search further")
    func refusesAnOffsetBeyondTheSearch() {
        let recording = SyntheticRecording(fps: 30, delay: 0.15)
        #expect {
            try OffsetEstimator.estimate(
                camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.1)
        } throws: { error in
            let refusal = error as? SyncCheckRefusal
            return refusal?.reason == .outOfRange && refusal?.message.contains("--max-offset") == true
        }
    }

    @Test("a gyroscope that felt another motion (an IMU on another rig) is refused, not matched")
    func refusesAnotherRigsGyro() {
        var recording = SyntheticRecording(fps: 30, delay: 0)
        recording.gyroElsewhere = 37
        for method in OffsetMethod.allCases {
            #expect {
                try OffsetEstimator.estimate(
                    camera: recording.camera(), gyro: recording.gyro(), method: method, maximumOffset: 0.3)
            } throws: { error in
                [.noMatch, .ambiguous].contains((error as? SyncCheckRefusal)?.reason)
            }
        }
    }

    @Test("a recording shorter than the search is refused as too short")
    func refusesAShortRecording() {
        let recording = SyntheticRecording(fps: 30, delay: 0, seconds: 1)
        #expect {
            try OffsetEstimator.estimate(
                camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.8)
        } throws: { ($0 as? SyncCheckRefusal)?.reason == .tooShort }
    }

    @Test("image alignment recovers a known shift and in-plane rotation")
    func alignsAKnownMotion() {
        let scene = TexturedScene(width: 160, height: 120)
        let turn = (x: 0.02, y: -0.03, z: 0.01)
        let factor = GreyImage.factor(forWidth: 160)
        func pyramid(_ rotation: (x: Double, y: Double, z: Double)) -> [GreyImage] {
            let image = scene.image(rotation: rotation)
            return ImageAlignment.pyramid(
                image.withUnsafeBytes { GreyImage(grey8: $0, width: 160, height: 120, factor: factor) })
        }
        let motion = ImageAlignment.align(pyramid((0, 0, 0)), pyramid(turn))
        let focal = scene.focalLength / Double(factor)
        // The scene's convention: a turn about y moves the view by -f·y, about x by +f·x, about z
        // rotates it by -z (the wall moves the other way in the image).
        #expect(abs(motion.shiftX - (-focal * turn.y)) < 0.1, "\(motion)")
        #expect(abs(motion.shiftY - focal * turn.x) < 0.1, "\(motion)")
        #expect(abs(motion.rotation - -turn.z) < 0.001, "\(motion)")
    }

    @Test(
        """
        the gyroscope's turn over an interval is the integral of its rate, in one walk or alone; \
        its gaps are found, and its rms rate is about its mean
        """)
    func integratesTheGyro() throws {
        let track = GyroTrack(samples: (0...100).map { (Double($0) / 100, SIMD3(1, 0, 0)) })
        #expect(abs(try #require(track.turn(from: 0.25, to: 0.755)) - 0.505) < 1e-9)
        #expect(track.turn(from: -0.1, to: 0.5) == nil)
        // The last pair out of order: the walk goes back for it.
        let pairs = [(0.1, 0.2), (0.2, 0.35), (0.5, 0.9), (0.05, 0.06), (0.99, 1.1)].map {
            CameraMotion.Pair(start: $0, end: $1, turn: 0, differenceEnergy: 0)
        }
        let turns = track.turns(over: pairs, shiftedBy: 0.05)
        for (turn, expected) in zip(turns, [0.1, 0.15, 0.4, 0.01, 0]) { #expect(abs(turn - expected) < 1e-9) }
        #expect(track.gaps.isEmpty)
        #expect(track.rmsRate(from: 0, to: 1) < 1e-6, "a constant rate is a bias, not turning")

        let gapped = GyroTrack(
            samples: (0...100).filter { !(40..<60).contains($0) }.map {
                (Double($0) / 100, SIMD3(0, Double($0 % 2), 0))
            })
        #expect(gapped.gaps == [0.39...0.6])
        #expect(gapped.spansGap(from: 0.3, to: 0.4))
        #expect(gapped.spansGap(from: 0.59, to: 0.7))
        #expect(!gapped.spansGap(from: 0.1, to: 0.39))
        #expect(!gapped.spansGap(from: 0.6, to: 0.9))
        #expect(abs(gapped.rmsRate(from: 0, to: 0.3) - 0.5) < 0.01, "a rate of 0 and 1 in turn: 0.5 about 0.5")
    }

    @Test("an IMU with only some gyroscope axes reads the others as 0, and names them")
    func readsSomeGyroAxes() throws {
        let yaw = try #require(GyroChannels(channels: ["accel_x", "anglvel_z"]))
        #expect(yaw.missingAxes == ["x", "y"])
        #expect(yaw.rate([0.5, 2]) == SIMD3(0, 0, 2))
        #expect(yaw.rate([0.5, nil]) == nil)
        #expect(GyroChannels(channels: ["accel_x", "accel_y", "accel_z"]) == nil)
        #expect(try #require(GyroChannels(channels: SyntheticIMU.channelNames)).missingAxes.isEmpty)
    }

    @Test("a long recording is analysed over its most excited minute, whole seconds")
    func picksTheMostExcitedMinute() throws {
        var bins = ExcitationBins()
        for index in 0..<(200 * 100) {
            let time = 1000 + Double(index) / 100
            // Still (a bias) but for 70 s to 130 s after the start, where it turns.
            let turning = time >= 1070 && time < 1130
            bins.add(SIMD3(0.1, turning ? sin(time * 7) : 0, 0), at: time)
        }
        #expect(bins.mostExcited(length: 60) == 1070...1130)
        #expect(bins.mostExcited(length: 300) == nil, "a recording shorter than the window is analysed whole")
    }

    @Test("frames too small to align are refused by size, and alignment of a tiny image does not trap")
    func tinyImages() {
        #expect(GreyImage.workingSize(width: 8, height: 6) == (8, 6))
        #expect(GreyImage.workingSize(width: 640, height: 480) == (128, 96))
        let tiny = GreyImage(width: 4, height: 2, pixels: [Float](repeating: 7, count: 8))
        #expect(ImageAlignment.align(ImageAlignment.pyramid(tiny), ImageAlignment.pyramid(tiny)) == .none)
    }
}

@Suite("A checked pair's warnings")
struct SyncCheckPairTests {
    static func pair(offset: Double, uncertainty: Double?, timeshift: Double? = nil) -> SyncCheckPair {
        let estimate = OffsetEstimate(
            method: .imageAlignment, offset: offset, peakCorrelation: 0.99, sharpness: 0.5, rivalCorrelation: 0.2,
            confidence: 0.9, gyroRMSRate: 1, turnScale: 1, pairs: 100, excludedPairs: 0, framePeriod: 1 / 30.0)
        return SyncCheckPair(
            camera: "cam0", imu: "imu0", alignment: .success(estimate), differenceEnergy: .success(estimate),
            calibratedTimeshift: timeshift, usedIntrinsics: false, frameUncertainty: uncertainty)
    }

    @Test(
        """
        the offset exceeds the frames' uncertainty only beyond the estimate's own error, and never \
        for frames that claim none
        """)
    func uncertaintyWarning() {
        #expect(Self.pair(offset: 0.0025, uncertainty: 0.001).exceedsFrameUncertainty)
        #expect(Self.pair(offset: -0.0025, uncertainty: 0.001).exceedsFrameUncertainty)
        #expect(!Self.pair(offset: 0.0015, uncertainty: 0.001).exceedsFrameUncertainty, "within 1 ms of it")
        #expect(!Self.pair(offset: 0.05, uncertainty: nil).exceedsFrameUncertainty)
    }

    @Test("a calibration agrees when its timeshift_cam_imu is the offset's negative, as Kalibr's is")
    func calibrationSign() {
        // The camera's stamps 7.5 ms late: the IMU's instant is the camera's less 7.5 ms.
        #expect(!Self.pair(offset: 0.0075, uncertainty: nil, timeshift: -0.0075).disagreesWithCalibration)
        #expect(Self.pair(offset: 0.0075, uncertainty: nil, timeshift: 0.0075).disagreesWithCalibration)
    }
}
