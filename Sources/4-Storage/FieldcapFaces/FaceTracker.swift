/// Carries faces between the frames the detector looks at, and over the ones it misses: each
/// face found becomes a track that moves with the speed its last two detections showed, and
/// stays covered for `hold` frames after its last detection. Between detections a track covers
/// both where it was last seen and where its motion puts it, grown a little more each frame, so
/// that a face is not exposed because it moved or turned away from the detector for a moment.
public struct FaceTracker: Sendable {
    struct Track: Sendable {
        var box: FaceBox
        var seenAt: Int
        var velocityX = 0.0
        var velocityY = 0.0
        /// Where and when the detector first found it, and how often since.
        var firstBox: FaceBox
        var firstSeenAt: Int
        var sightings = 1
    }

    /// What one detection did to the tracks, for a cover that looks back: the faces no track had,
    /// and the tracks seen for the second time, whose speed is now known.
    public struct Sightings: Sendable {
        /// Faces new in view, or found again after the hold.
        public var fresh: [FaceBox] = []
        /// Each track seen for the second time: where and when it was first found, and its speed
        /// in pixels a frame.
        public var second: [(box: FaceBox, frame: Int, velocityX: Double, velocityY: Double)] = []
    }

    /// Frames a face stays covered after the detector last saw it.
    public let hold: Int
    /// How much a box carried forward grows each frame after its last detection (a fraction of
    /// its size on each side), up to `maximumGrowth`.
    static let growthPerFrame = 0.05
    static let maximumGrowth = 0.25

    private(set) var tracks: [Track] = []

    public init(hold: Int) {
        precondition(hold >= 0)
        self.hold = hold
    }

    /// What the detector found in frame `frame` (frames numbered in order; not every one need
    /// be given). Tracks past their hold are dropped first: a face found again after it is a
    /// fresh one (its frames since the hold were not covered).
    @discardableResult
    public mutating func detected(_ faces: [FaceBox], inFrame frame: Int) -> Sightings {
        tracks = tracks.filter { frame - $0.seenAt <= hold }
        var unmatched = Array(tracks.indices)
        var fresh: [Track] = []
        var sightings = Sightings()
        // Each face to the track whose predicted box it overlaps most, the surest faces first.
        for face in faces.sorted(by: { $0.score > $1.score }) {
            let best = unmatched.max { a, b in
                predicted(tracks[a], at: frame).overlap(face) < predicted(tracks[b], at: frame).overlap(face)
            }
            if let best, predicted(tracks[best], at: frame).overlap(face) > 0.1 {
                var track = tracks[best]
                let frames = Double(max(1, frame - track.seenAt))
                track.velocityX = (face.centerX - track.box.centerX) / frames
                track.velocityY = (face.centerY - track.box.centerY) / frames
                track.box = face
                track.seenAt = frame
                track.sightings += 1
                if track.sightings == 2 {
                    sightings.second.append((track.firstBox, track.firstSeenAt, track.velocityX, track.velocityY))
                }
                tracks[best] = track
                unmatched.removeAll { $0 == best }
            } else {
                fresh.append(Track(box: face, seenAt: frame, firstBox: face, firstSeenAt: frame))
            }
        }
        tracks += fresh
        sightings.fresh = fresh.map(\.box)
        return sightings
    }

    /// A box carried `frames` frames away from where it was seen, grown as a track's is.
    static func carried(_ box: FaceBox, frames: Int) -> FaceBox {
        box.grown(by: min(maximumGrowth, growthPerFrame * Double(frames)))
    }

    /// The boxes to cover in frame `frame`: each track's, carried forward from its last detection.
    public func boxes(inFrame frame: Int) -> [FaceBox] {
        tracks.compactMap { track in
            let since = frame - track.seenAt
            guard since <= hold else { return nil }
            guard since > 0 else { return track.box }
            let growth = min(Self.maximumGrowth, Self.growthPerFrame * Double(since))
            return track.box.union(predicted(track, at: frame)).grown(by: growth)
        }
    }

    private func predicted(_ track: Track, at frame: Int) -> FaceBox {
        let since = Double(frame - track.seenAt)
        var box = track.box
        box.x += track.velocityX * since
        box.y += track.velocityY * since
        return box
    }
}
