import FieldcapCore
import Testing

@testable import FieldcapSyncCheck

@Suite("The camera–IMU offset, measured from a synthetic recording with a known delay")
struct OffsetEstimatorTests {
    /// The documented accuracy: within a quarter of a frame period of the truth.
    static let tolerance = 0.25

    @Test(
        "image alignment finds the delay within a quarter of a frame period",
        arguments: [(30.0, -0.020), (30, 0), (30, 0.0075), (60, -0.020), (60, 0), (60, 0.0075)])
    func findsTheDelay(fps: Double, delay: Double) throws {
        let recording = SyntheticRecording(fps: fps, delay: delay)
        let estimate = try OffsetEstimator.estimate(
            camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        let error = abs(estimate.offset - delay)
        #expect(
            error <= Self.tolerance / fps, "\(fps) fps, delay \(delay * 1000) ms: found \(estimate.offset * 1000) ms")
        #expect(estimate.peakCorrelation > 0.9)
        #expect(estimate.confidence > 0.5)
        #expect(estimate.timeshiftCamIMU == -estimate.offset)
    }

    @Test("frames whose brightness flickers by ±3% (auto-exposure, mains) still give the delay")
    func withstandsFlicker() throws {
        var recording = SyntheticRecording(fps: 30, delay: 0.0075)
        recording.flicker = 0.03
        let estimate = try OffsetEstimator.estimate(
            camera: recording.camera(), gyro: recording.gyro(), method: .imageAlignment, maximumOffset: 0.3)
        #expect(abs(estimate.offset - 0.0075) <= Self.tolerance / 30, "found \(estimate.offset * 1000) ms")
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

    @Test("the gyroscope's turn over an interval is the integral of its rate")
    func integratesTheGyro() throws {
        let track = GyroTrack(samples: (0...100).map { (Double($0) / 100, SIMD3(1, 0, 0)) })
        #expect(abs(try #require(track.turn(from: 0.25, to: 0.755)) - 0.505) < 1e-9)
        #expect(track.turn(from: -0.1, to: 0.5) == nil)
    }
}
