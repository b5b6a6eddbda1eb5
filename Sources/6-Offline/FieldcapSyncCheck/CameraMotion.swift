/// What a camera's frames say about its motion, one entry per pair of consecutive frames: the
/// turn between them found by image alignment, and the peer method's image-difference energy.
/// Fed one frame at a time (an hour of frames is never held), each turned to a small grey image.
///
/// Thread-bound.
public struct CameraMotion: Sendable {
    /// Two consecutive frames: their stamps (seconds, on the session's clock) and what moved.
    public struct Pair: Sendable {
        public var start: Double
        public var end: Double
        /// Radians: the turn image alignment found, through the focal length.
        public var turn: Double
        /// The mean squared difference of the two images (grey levels squared).
        public var differenceEnergy: Double
    }

    /// Pixels of the working image (after averaging down): the focal lengths, x and y.
    public let focalLength: (x: Double, y: Double)
    public private(set) var pairs: [Pair] = []
    /// Frames that could not be read (`skip`): each ends a run of pairs, never bridged.
    public private(set) var skippedFrames = 0
    private var previous: (time: Double, pyramid: [GreyImage])?

    /// `focalLength`: in pixels of the images `add` is given (the working size).
    public init(focalLength: (x: Double, y: Double)) {
        precondition(focalLength.x > 0 && focalLength.y > 0)
        self.focalLength = focalLength
    }

    /// The next frame, stamped `time` seconds; frames come in time order.
    public mutating func add(_ image: GreyImage, at time: Double) {
        precondition(
            previous.map { $0.pyramid[0].width == image.width && $0.pyramid[0].height == image.height } ?? true)
        let pyramid = ImageAlignment.pyramid(image)
        if let previous, time > previous.time {
            let motion = ImageAlignment.align(previous.pyramid, pyramid)
            let turn = SIMD3(motion.shiftX / focalLength.x, motion.shiftY / focalLength.y, motion.rotation)
            pairs.append(
                Pair(
                    start: previous.time, end: time, turn: (turn * turn).sum().squareRoot(),
                    differenceEnergy: pyramid[0].meanSquaredDifference(from: previous.pyramid[0])))
        }
        if previous == nil || time > previous!.time { previous = (time, pyramid) }
    }

    /// A frame that could not be read (it does not decode, or is of another size): the next frame
    /// starts a new pair rather than pairing across it, as their interval is not one frame's.
    public mutating func skip() {
        skippedFrames += 1
        previous = nil
    }
}
