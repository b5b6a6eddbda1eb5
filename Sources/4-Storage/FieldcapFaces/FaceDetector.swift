/// An 8-bit image the detector reads: grey (one byte a pixel) or RGB (three), rows `stride`
/// bytes apart.
public struct DetectionImage {
    public var pixels: UnsafeRawBufferPointer
    public var width: Int
    public var height: Int
    public var stride: Int
    public var channels: Int

    public init(pixels: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, channels: Int) {
        precondition(channels == 1 || channels == 3)
        precondition(pixels.count >= (height - 1) * stride + width * channels)
        self.pixels = pixels
        self.width = width
        self.height = height
        self.stride = stride
        self.channels = channels
    }
}

/// Finds faces in an image. A detector is used by one thread at a time.
public protocol FaceDetecting: AnyObject {
    /// What the export's metadata and the sidecar name it by, with its settings.
    var name: String { get }
    func detect(_ image: DetectionImage) throws(FaceCoverError) -> [FaceBox]
}

/// MTCNN through the face detector's library (`FaceDetectorLibrary`) with the installed model.
public final class MTCNNFaceDetector: FaceDetecting {
    /// The smallest face searched for, in pixels (12 or more). The default, 36, found every
    /// frontal face of 40 pixels or more in the labelled set at 27 ms a 640x480 frame; 20 looks
    /// for smaller ones at 2.5 times the time (BENCHMARKS.md).
    public let minFace: Int
    public let name: String
    private let library: FaceDetectorLibrary
    private let handle: OpaquePointer
    private var found = [Float](repeating: 0, count: 5 * 64)
    private static let thresholds: [Float] = [0.6, 0.7, 0.7]
    private static let scaleStep: Float = 0.709

    /// Opens the library and the installed model (checked by hash). `threads`: the threads
    /// OpenCV may use (a setting of the whole process).
    public init(minFace: Int = 36, threads: Int = 1, model: FaceModel? = nil) throws(FaceCoverError) {
        guard minFace >= 12 else { throw FaceCoverError("the smallest face is 12 pixels or more, not \(minFace)") }
        switch FaceDetectorLibrary.shared {
        case .success(let library): self.library = library
        case .failure(let error): throw error
        }
        let checked: FaceModel
        if let model { checked = model } else { checked = try FaceModel.installed() }
        var error = [CChar](repeating: 0, count: 512)
        guard let handle = library.open(checked.directory, Int32(threads), &error, error.count) else {
            throw FaceCoverError("the face detector cannot open its model: \(FaceCoverError.text(error))")
        }
        self.handle = handle
        self.minFace = minFace
        name = "\(FaceModel.name), smallest face \(minFace) px, thresholds 0.6/0.7/0.7"
    }

    deinit { library.close(handle) }

    public func detect(_ image: DetectionImage) throws(FaceCoverError) -> [FaceBox] {
        var error = [CChar](repeating: 0, count: 512)
        var count: Int32 = 0
        // Twice: the first time with room for 64 faces, again with room for all when there were more.
        for _ in 0..<2 {
            count = Self.thresholds.withUnsafeBufferPointer { thresholds in
                found.withUnsafeMutableBufferPointer { found in
                    library.detect(
                        handle, image.pixels.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(image.width),
                        Int32(image.height), Int32(image.stride), Int32(image.channels), Int32(minFace),
                        thresholds.baseAddress, Self.scaleStep, found.baseAddress, Int32(found.count / 5), &error,
                        error.count)
                }
            }
            guard count >= 0 else { throw FaceCoverError(FaceCoverError.text(error)) }
            if Int(count) * 5 <= found.count { break }
            found = [Float](repeating: 0, count: Int(count) * 5)
        }
        var faces: [FaceBox] = []
        for k in 0..<min(Int(count), found.count / 5) {
            let values = found[(5 * k)..<(5 * k + 5)].map { Double($0) }
            faces.append(FaceBox(x: values[0], y: values[1], width: values[2], height: values[3], score: values[4]))
        }
        return faces
    }
}
