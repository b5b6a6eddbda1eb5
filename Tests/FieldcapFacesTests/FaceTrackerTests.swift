import Testing

@testable import FieldcapFaces

@Suite("Faces carried between detections and over missed ones")
struct FaceTrackerTests {
    /// How much of `face` the boxes cover (pixel-counted on a grid of 1 px).
    static func coverage(of face: FaceBox, by boxes: [FaceBox]) -> Double {
        var covered = 0, total = 0
        for y in Int(face.y)..<Int(face.y + face.height) {
            for x in Int(face.x)..<Int(face.x + face.width) {
                total += 1
                let px = Double(x) + 0.5, py = Double(y) + 0.5
                if boxes.contains(where: { px >= $0.x && px < $0.x + $0.width && py >= $0.y && py < $0.y + $0.height })
                {
                    covered += 1
                }
            }
        }
        return Double(covered) / Double(total)
    }

    @Test("a face moving 5 px a frame, detected every 4th frame, is covered in every frame between")
    func motion() {
        var tracker = FaceTracker(hold: 8)
        for frame in 0..<40 {
            let face = FaceBox(x: 20 + 5 * Double(frame), y: 50 + 1.5 * Double(frame), width: 40, height: 48)
            if frame % 4 == 0 { tracker.detected([face], inFrame: frame) }
            let boxes = tracker.boxes(inFrame: frame)
            #expect(boxes.count == 1)
            // The first detections give no speed yet: the box grows to cover the face (within 4 frames).
            #expect(Self.coverage(of: face, by: boxes) >= (frame < 4 ? 0.5 : 0.99), "frame \(frame)")
        }
    }

    @Test("a face the detector misses stays covered for `hold` frames, then is let go")
    func missed() {
        var tracker = FaceTracker(hold: 6)
        let face = FaceBox(x: 100, y: 100, width: 50, height: 60)
        tracker.detected([face], inFrame: 0)
        tracker.detected([], inFrame: 3)
        #expect(Self.coverage(of: face, by: tracker.boxes(inFrame: 3)) == 1)
        tracker.detected([], inFrame: 6)
        #expect(Self.coverage(of: face, by: tracker.boxes(inFrame: 6)) == 1)
        tracker.detected([], inFrame: 9)
        #expect(tracker.boxes(inFrame: 9).isEmpty)
    }

    @Test("two faces keep their own tracks; a new face starts one")
    func twoFaces() {
        var tracker = FaceTracker(hold: 4)
        let left = FaceBox(x: 10, y: 10, width: 30, height: 30), right = FaceBox(x: 200, y: 10, width: 30, height: 30)
        tracker.detected([left, right], inFrame: 0)
        tracker.detected([left.moved(3, 0), right.moved(-3, 0)], inFrame: 1)
        #expect(tracker.tracks.count == 2)
        #expect(tracker.tracks.map(\.velocityX).sorted() == [-3, 3])
        tracker.detected(
            [left.moved(6, 0), right.moved(-6, 0), FaceBox(x: 100, y: 200, width: 30, height: 30)], inFrame: 2)
        #expect(tracker.tracks.count == 3)
    }
}

extension FaceBox {
    func moved(_ dx: Double, _ dy: Double) -> FaceBox { FaceBox(x: x + dx, y: y + dy, width: width, height: height) }
}
