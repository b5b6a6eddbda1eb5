import CPNG
import Glibc
import Testing

@testable import FieldcapFaces

/// An RGB photograph read from a PNG file.
struct Photo {
    var width: Int
    var height: Int
    var rgb: [UInt8]

    init(width: Int, height: Int, rgb: [UInt8]) {
        self.width = width
        self.height = height
        self.rgb = rgb
    }

    init(png path: String) throws {
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: UInt32 = 0, height: UInt32 = 0
        var message = [CChar](repeating: 0, count: 256)
        guard CPNG_decode_file(path, 3, &pixels, &width, &height, &message) == 0, let pixels else {
            throw FaceCoverError(FaceCoverError.text(message))
        }
        defer { free(pixels) }
        self.init(
            width: Int(width), height: Int(height),
            rgb: Array(UnsafeBufferPointer(start: pixels, count: Int(width) * Int(height) * 3)))
    }

    /// The part `box` of the photograph at `width` x `height`, bilinearly.
    func crop(_ box: FaceBox, toWidth width: Int, height: Int) -> Photo {
        var out = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let sx = min(
                    Double(self.width - 1), max(0, box.x + (Double(x) + 0.5) * box.width / Double(width) - 0.5))
                let sy = min(
                    Double(self.height - 1), max(0, box.y + (Double(y) + 0.5) * box.height / Double(height) - 0.5))
                let x0 = Int(sx), y0 = Int(sy), x1 = min(x0 + 1, self.width - 1), y1 = min(y0 + 1, self.height - 1)
                let fx = sx - Double(x0), fy = sy - Double(y0)
                for c in 0..<3 {
                    func at(_ px: Int, _ py: Int) -> Double { Double(rgb[(py * self.width + px) * 3 + c]) }
                    let top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx
                    let bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx
                    out[(y * width + x) * 3 + c] = UInt8((top * (1 - fy) + bottom * fy).rounded())
                }
            }
        }
        return Photo(width: width, height: height, rgb: out)
    }

    mutating func paste(_ other: Photo, x: Int, y: Int) {
        for row in 0..<other.height where (0..<height).contains(y + row) {
            for column in 0..<other.width where (0..<width).contains(x + column) {
                for c in 0..<3 {
                    rgb[((y + row) * width + x + column) * 3 + c] = other.rgb[(row * other.width + column) * 3 + c]
                }
            }
        }
    }

    /// A background without faces: smooth gradients and a few bars.
    static func background(width: Int, height: Int) -> Photo {
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let bar = (x / 80 + y / 60) % 2 == 0 ? 30 : 0
                rgb[(y * width + x) * 3] = UInt8(min(255, 60 + x * 120 / width + bar))
                rgb[(y * width + x) * 3 + 1] = UInt8(min(255, 90 + y * 100 / height))
                rgb[(y * width + x) * 3 + 2] = UInt8(min(255, 140 - x * 60 / width + bar))
            }
        }
        return Photo(width: width, height: height, rgb: rgb)
    }

    /// The photograph as a YUYV frame (BT.601 full range, each pair's chroma averaged).
    var yuyv: [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height * 2)
        func yuv(_ index: Int) -> (Double, Double, Double) {
            let r = Double(rgb[index * 3]), g = Double(rgb[index * 3 + 1]), b = Double(rgb[index * 3 + 2])
            let luma = 0.299 * r + 0.587 * g + 0.114 * b
            return (luma, (b - luma) / 1.772 + 128, (r - luma) / 1.402 + 128)
        }
        func byte(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        for index in stride(from: 0, to: width * height, by: 2) {
            let (y0, u0, v0) = yuv(index), (y1, u1, v1) = yuv(index + 1)
            out.replaceSubrange(
                index * 2..<(index * 2 + 4), with: [byte(y0), byte((u0 + u1) / 2), byte(y1), byte((v0 + v1) / 2)])
        }
        return out
    }
}

/// Real faces nobody here drew: scikit-image's `astronaut` (a NASA photograph, in Debian's
/// python3-skimage), its face's box marked by eye.
enum Photographs {
    static let astronaut = "/usr/lib/python3/dist-packages/skimage/data/astronaut.png"
    static let astronautFace = FaceBox(x: 178, y: 78, width: 95, height: 105)
}

@Suite("MTCNN on real faces: Debian's OpenCV, the installed model", .serialized)
struct MTCNNTests {
    /// How much of `face` the boxes cover.
    static func coverage(of face: FaceBox, by boxes: [FaceBox]) -> Double {
        FaceTrackerTests.coverage(of: face, by: boxes)
    }

    @Test("the astronaut's face, as photographed, and nothing else")
    func photograph() throws {
        let photo = try Photo(png: Photographs.astronaut)
        let detector = try MTCNNFaceDetector()
        let faces = try photo.rgb.withUnsafeBytes { pixels throws(FaceCoverError) in
            try detector.detect(
                DetectionImage(
                    pixels: pixels, width: photo.width, height: photo.height, stride: photo.width * 3, channels: 3))
        }
        #expect(faces.count == 1)
        #expect(faces.contains { $0.overlap(Photographs.astronautFace) >= 0.5 }, "found \(faces)")
    }

    @Test(
        "in YUYV frames at 40 to 200 px: covered whole, then no face found where it was, the rest untouched",
        arguments: [(40, 30, 40), (64, 500, 300), (120, 250, 150), (200, 420, 60)])
    func composites(faceWidth: Int, x: Int, y: Int) throws {
        let photo = try Photo(png: Photographs.astronaut)
        // The head: the face's box grown by 40 % on every side, scaled so the face is `faceWidth` wide.
        let head = Photographs.astronautFace.grown(by: 0.4)
        let scale = Double(faceWidth) / Photographs.astronautFace.width
        let headWidth = Int((head.width * scale).rounded()), headHeight = Int((head.height * scale).rounded())
        var frame = Photo.background(width: 640, height: 480)
        frame.paste(photo.crop(head, toWidth: headWidth, height: headHeight), x: x, y: y)
        let face = FaceBox(
            x: Double(x) + 0.4 * Photographs.astronautFace.width * scale,
            y: Double(y) + 0.4 * Photographs.astronautFace.height * scale, width: Double(faceWidth),
            height: Photographs.astronautFace.height * scale)
        let original = frame.yuyv
        var yuyv = original
        let cover = try FaceCover.mtcnn(layout: FrameLayout(.yuyv, width: 640, height: 480), settings: .init())
        let boxes = try cover.cover(&yuyv)
        // What of the face is in the frame (the largest runs past its right edge).
        let visible = FaceBox(x: face.x, y: face.y, width: min(face.width, 640 - face.x), height: face.height)
        #expect(Self.coverage(of: visible, by: boxes) == 1, "face \(face), covered \(boxes)")
        #expect(boxes.count == 1)
        for row in 0..<480 {
            for column in 0..<640 {
                // The areas returned are exactly those averaged: luma and chroma as they were outside.
                let inBox = boxes.contains {
                    Double(column) >= $0.x && Double(column) < $0.x + $0.width && Double(row) >= $0.y
                        && Double(row) < $0.y + $0.height
                }
                if !inBox {
                    let at = row * 1280 + column * 2
                    #expect(yuyv[at] == original[at] && yuyv[at + 1] == original[at + 1], "\(column),\(row)")
                }
            }
        }
        // Covered, the face is a face no more: the detector finds nothing where it was.
        let again = try FaceCover.mtcnn(layout: FrameLayout(.yuyv, width: 640, height: 480), settings: .init())
        var copy = yuyv
        let found = try again.cover(&copy)
        #expect(!found.contains { $0.overlap(face) > 0.1 }, "found \(found) after covering")
    }

    @Test("a face moving 6 px a frame, detected every 3rd frame, is covered in each of 24 frames")
    func motion() throws {
        let photo = try Photo(png: Photographs.astronaut)
        let head = Photographs.astronautFace.grown(by: 0.4)
        let scale = 60 / Photographs.astronautFace.width
        let crop = photo.crop(head, toWidth: Int(head.width * scale), height: Int(head.height * scale))
        var settings = FaceCover.Settings()
        settings.detectEvery = 3
        let cover = try FaceCover.mtcnn(layout: FrameLayout(.yuyv, width: 640, height: 480), settings: settings)
        for index in 0..<24 {
            var frame = Photo.background(width: 640, height: 480)
            let x = 100 + 6 * index, y = 150 + 2 * index
            frame.paste(crop, x: x, y: y)
            var yuyv = frame.yuyv
            let boxes = try cover.cover(&yuyv)
            let face = FaceBox(
                x: Double(x) + 0.4 * Photographs.astronautFace.width * scale,
                y: Double(y) + 0.4 * Photographs.astronautFace.height * scale, width: 60,
                height: Photographs.astronautFace.height * scale)
            #expect(Self.coverage(of: face, by: boxes) == 1, "frame \(index): face \(face), covered \(boxes)")
        }
        #expect(cover.report.detections == 8 && cover.report.framesCovered == 24)
    }
}
