import TestSupport
import Testing

@testable import FieldcapFaces

/// A detector that finds what it is told, and notes what it was shown.
final class ScriptedDetector: FaceDetecting {
    let name = "scripted"
    var faces: (Int) -> [FaceBox]
    private(set) var shown: [(width: Int, height: Int, channels: Int, first: [UInt8])] = []

    init(faces: @escaping (Int) -> [FaceBox]) { self.faces = faces }

    func detect(_ image: DetectionImage) throws(FaceCoverError) -> [FaceBox] {
        shown.append((image.width, image.height, image.channels, Array(image.pixels.prefix(6))))
        return faces(shown.count - 1)
    }
}

@Suite("Covering a camera's faces frame by frame")
struct FaceCoverTests {
    /// `frame` pushed `times` times through a cover that looks ahead, and what it settled, flushed.
    static func pushed(
        _ frame: [UInt8], times: Int, through cover: FaceCover
    ) throws -> [(
        bytes: [UInt8], covered: [FaceBox]
    )] {
        var settled: [(bytes: [UInt8], covered: [FaceBox])] = []
        for _ in 0..<times { settled += try cover.push(frame) }
        return settled + cover.flush()
    }

    @Test("the detector sees every Nth frame; the boxes, grown by the margin, are covered in each; the report counts")
    func everyNth() throws {
        let layout = FrameLayout(.grey8, width: 160, height: 120)
        let detector = ScriptedDetector { _ in [FaceBox(x: 60, y: 40, width: 20, height: 24, score: 0.99)] }
        var settings = FaceCover.Settings()
        settings.detectEvery = 3
        settings.margin = 0.5
        let cover = FaceCover(layout: layout, settings: settings, detector: detector)
        var random = SplitMix64(seed: 3)
        let detected = FaceBox(x: 50, y: 28, width: 40, height: 48, score: 0.99)  // 60,40 20x24 grown by half
        for index in 0..<7 {
            let original = (0..<layout.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
            var frame = original
            let boxes = try cover.cover(&frame)
            #expect(boxes.count == 1)
            if index % 3 == 0 {
                // 50..90 x 28..76 in blocks of 8 (48 / 6) on the frame's grid: 48..96 x 24..80.
                #expect(boxes == [FaceBox(x: 48, y: 24, width: 48, height: 56, score: 0.99)])
            } else {
                // Carried forward: grown, never smaller than the face as last detected.
                #expect(boxes[0].x < detected.x && boxes[0].x + boxes[0].width > detected.x + detected.width)
            }
            let box = boxes[0]
            let columns = Int(box.x.rounded(.down))..<Int((box.x + box.width).rounded(.up))
            let rows = Int(box.y.rounded(.down))..<Int((box.y + box.height).rounded(.up))
            for y in 0..<120 {
                for x in 0..<160 where !columns.contains(x) || !rows.contains(y) {
                    #expect(frame[y * 160 + x] == original[y * 160 + x])
                }
            }
            #expect(frame != original)
        }
        #expect(detector.shown.count == 3)  // frames 0, 3 and 6
        #expect(cover.report.frames == 7 && cover.report.detections == 3 && cover.report.facesDetected == 3)
        #expect(
            cover.report.framesCovered == 7 && cover.report.boxesCovered == 7 && cover.report.mostBoxesInAFrame == 1)
        #expect(cover.report.json.contains("\"detect_every\":3"))
    }

    @Test(
        """
        looking ahead: a face that comes into view between the frames looked at is covered from \
        its first frame, held back until the detector finds it; without, it is exposed until then
        """
    )
    func lookAhead() throws {
        let layout = FrameLayout(.grey8, width: 160, height: 120)
        let face = FaceBox(x: 60, y: 40, width: 20, height: 24, score: 0.99)
        // The face is in frames 5 to 11; the detector looks at frames 0, 4 and 8 (every 4th) and
        // finds it at 8: frames 5 to 7 show it before it is found.
        func frames(_ settings: FaceCover.Settings) throws -> [(covered: [FaceBox], changed: Bool)] {
            let detector = ScriptedDetector { call in call >= 2 ? [face] : [] }
            let cover = FaceCover(layout: layout, settings: settings, detector: detector)
            let original = (0..<layout.byteCount).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let settled = try Self.pushed(original, times: 12, through: cover)
            #expect(detector.shown.count == 3)
            return settled.map { ($0.covered, $0.bytes != original) }
        }
        var settings = FaceCover.Settings()
        settings.detectEvery = 4
        settings.hold = 6
        let plain = try frames(settings)
        #expect(plain.count == 12)
        #expect(
            plain.map { !$0.covered.isEmpty } == Array(repeating: false, count: 8) + Array(repeating: true, count: 4))
        settings.lookAhead = 4
        let ahead = try frames(settings)
        #expect(ahead.count == 12)
        // Frames 4 to 7 (the look-ahead) and 8 on; each covered box holds the face.
        #expect(
            ahead.map { !$0.covered.isEmpty } == Array(repeating: false, count: 4) + Array(repeating: true, count: 8))
        #expect(ahead.allSatisfy { $0.covered.isEmpty != $0.changed })
        for frame in ahead where !frame.covered.isEmpty {
            let box = frame.covered[0]
            #expect(box.x <= face.x && box.x + box.width >= face.x + face.width, "\(box)")
            #expect(box.y <= face.y && box.y + box.height >= face.y + face.height, "\(box)")
        }
        #expect(FaceCover.Settings().offline(rate: 30).lookAhead == 15)
    }

    @Test(
        """
        looking back along the speed a face showed: one walking into view at 5 px a frame, missed \
        at first and found 7 and 11 frames later, is covered where it truly was in each frame before
        """
    )
    func lookBackAlongMotion() throws {
        let layout = FrameLayout(.grey8, width: 160, height: 120)
        func truth(_ frame: Int) -> FaceBox? {
            frame >= 1 ? FaceBox(x: Double(10 + 5 * (frame - 1)), y: 30, width: 40, height: 48, score: 0.99) : nil
        }
        // Called for frames 0, 4, 8, 12, 16; it misses the face at frame 4.
        let detector = ScriptedDetector { call in call == 1 ? [] : truth(4 * call).map { [$0] } ?? [] }
        var settings = FaceCover.Settings()
        settings.detectEvery = 4
        settings.hold = 12
        settings.lookAhead = 12
        let cover = FaceCover(layout: layout, settings: settings, detector: detector)
        let settled = try Self.pushed([UInt8](repeating: 9, count: layout.byteCount), times: 18, through: cover)
        #expect(settled.count == 18)
        for (index, result) in settled.enumerated() {
            guard let face = truth(index) else { continue }
            let holds = result.covered.contains {
                $0.x <= face.x && $0.x + $0.width >= face.x + face.width && $0.y <= face.y
                    && $0.y + $0.height >= face.y + face.height
            }
            #expect(holds, "frame \(index): the face at \(face) is not inside \(result.covered)")
        }
    }

    @Test("a face found again after its hold is covered back to where the hold ended, and the hold counts again")
    func foundAgainAfterTheHold() throws {
        let layout = FrameLayout(.grey8, width: 160, height: 120)
        let face = FaceBox(x: 60, y: 40, width: 20, height: 24, score: 0.99)
        // Seen at frame 0, missed at 4 and 8, found again at 12; held for 6 frames.
        let detector = ScriptedDetector { call in call == 0 || call >= 3 ? [face] : [] }
        var settings = FaceCover.Settings()
        settings.detectEvery = 4
        settings.hold = 6
        settings.lookAhead = 6
        let cover = FaceCover(layout: layout, settings: settings, detector: detector)
        let settled = try Self.pushed([UInt8](repeating: 9, count: layout.byteCount), times: 14, through: cover)
        // Frames 0-6 held from frame 0; 7-11 only by looking back from 12; 12 and 13 seen.
        #expect(settled.map { !$0.covered.isEmpty } == Array(repeating: true, count: 14))
    }

    @Test("YUYV and NV12 are shown to the detector in RGB; Y16 as its high byte")
    func detectorInput() throws {
        // YUYV: Y 100, U 128, V 128 (grey) then Y 200, U 90, V 240 (a red).
        var yuyv: [UInt8] = []
        for _ in 0..<(16 * 12 / 2) { yuyv += [100, 128, 100, 128] }
        yuyv[0...3] = [100, 90, 200, 240]
        let detector = ScriptedDetector { _ in [] }
        _ = try FaceCover(layout: FrameLayout(.yuyv, width: 16, height: 12), settings: .init(), detector: detector)
            .cover(&yuyv)
        let rgb = detector.shown[0].first
        #expect(detector.shown[0].channels == 3)
        // Y 100, U -38, V +112: R = 100 + 1.402 * 112 = 257 → 255; G = 100 - 0.344 * -38 - 0.714 * 112 = 33;
        // B = 100 + 1.772 * -38 = 33.
        #expect(Array(rgb[0..<3]) == [255, 33, 33])
        #expect(Array(rgb[3..<6]) == [255, 133, 133])
        // A 10-bit camera's Y16: samples 0 to 955 (their high byte never above 3, a black frame
        // to an 8-bit view) are stretched over the grey scale from their 1st to 99th percentile.
        var y16 = [UInt8](repeating: 0, count: 16 * 12 * 2)
        for index in 0..<(16 * 12) {
            y16[2 * index] = UInt8((index * 5) & 0xFF)
            y16[2 * index + 1] = UInt8((index * 5) >> 8)
        }
        let grey = ScriptedDetector { _ in [] }
        _ = try FaceCover(layout: FrameLayout(.grey16, width: 16, height: 12), settings: .init(), detector: grey)
            .cover(&y16)
        #expect(grey.shown[0].channels == 1)
        // Past the lowest and highest 1% (one sample each): 5 to 0, 950 to 255; so the first six,
        // 0, 5, 10, 15, 20, 25 -> 0, 0, 1, 2, 4, 5 (255 * (v - 5) / 945, rounded down).
        #expect(grey.shown[0].first == [0, 0, 1, 2, 4, 5])
    }

    @Test("a frame shorter than its layout is refused")
    func shortFrame() {
        var frame = [UInt8](repeating: 0, count: 100)
        let cover = FaceCover(
            layout: FrameLayout(.grey8, width: 16, height: 12), settings: .init(),
            detector: ScriptedDetector { _ in [] })
        #expect(throws: FaceCoverError.self) { try cover.cover(&frame) }
    }
}
