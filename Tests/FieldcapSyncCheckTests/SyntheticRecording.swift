import FieldcapCore
import FieldcapSyncCheck
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A recording with a known camera–IMU offset: a textured wall rendered as a camera turning with
/// `HandMotion` sees it, each frame at its stamp less `delay` (the camera's stamps late by it),
/// and a gyroscope's samples of the same motion at its own rate, with white noise.
struct SyntheticRecording {
    var fps: Double
    /// Seconds the camera's stamps are late: the offset the check should find.
    var delay: Double
    var seconds = 4.0
    var gyroRate = 400.0
    /// rad/s, one standard deviation per axis: a MEMS gyroscope's at 400 Hz.
    var gyroNoise = 0.01
    var motion = HandMotion.waved
    /// Each frame's brightness scaled by up to ± this fraction at random, as auto-exposure and
    /// mains flicker do: nothing turned, but every pixel changed.
    var flicker = 0.0
    /// Seconds later in the motion the gyroscope reads than the camera sees: far beyond the
    /// search, an IMU on another rig.
    var gyroElsewhere = 0.0
    /// Frames (by index) the camera lost: never delivered, as a full ring drops them.
    var lostFrames: Set<Int> = []
    /// Seconds after `origin` the gyroscope delivered nothing.
    var gyroGap: Range<Double>?
    /// rad/s the gyroscope reads on each axis when still, as a MEMS gyroscope does.
    var gyroBias = SIMD3<Double>.zero
    var width = 160
    var height = 120
    /// Where the recording's clock starts: away from zero, as a monotonic clock is.
    var origin = 1234.5

    func camera() -> CameraMotion {
        let scene = TexturedScene(width: width, height: height)
        let factor = GreyImage.factor(forWidth: width)
        let focal = scene.focalLength / Double(factor)
        var camera = CameraMotion(focalLength: (focal, focal))
        var frame = [UInt8](repeating: 0, count: width * height)
        var random = SplitMix64(seed: 4747)
        for index in 0..<Int(seconds * fps) where !lostFrames.contains(index) {
            let stamp = origin + Double(index) / fps
            frame.withUnsafeMutableBytes { scene.render(rotation: motion.rotation(at: stamp - delay), into: $0) }
            if flicker > 0 {
                let gain = 1 + Double.random(in: -flicker...flicker, using: &random)
                for at in frame.indices { frame[at] = UInt8(min(255, (Double(frame[at]) * gain).rounded())) }
            }
            let image = frame.withUnsafeBytes { GreyImage(grey8: $0, width: width, height: height, factor: factor) }
            camera.add(image, at: stamp)
        }
        return camera
    }

    func gyro(seed: UInt64 = 47) -> GyroTrack {
        var random = SplitMix64(seed: seed)
        func gaussian() -> Double {
            // Box–Muller.
            let u = Double.random(in: Double.ulpOfOne..<1, using: &random)
            let v = Double.random(in: 0..<1, using: &random)
            return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
        }
        // The gyroscope starts a little before the camera and ends a little after, as an IMU
        // opened first does.
        let samples = (0..<Int((seconds + 1) * gyroRate)).compactMap { index -> (Double, SIMD3<Double>)? in
            let time = origin - 0.5 + Double(index) / gyroRate
            if let gyroGap, gyroGap.contains(time - origin) { return nil }
            let rate = motion.angularVelocity(at: time + gyroElsewhere)
            let noise = SIMD3(gaussian(), gaussian(), gaussian()) * gyroNoise
            return (time, SIMD3(rate.x, rate.y, rate.z) + gyroBias + noise)
        }
        return GyroTrack(samples: samples)
    }
}
