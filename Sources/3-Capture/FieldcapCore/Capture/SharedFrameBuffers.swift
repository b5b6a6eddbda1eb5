import Synchronization

/// A camera's frame buffers, lent to a device that reads frames in place: a V4L2 hardware
/// encoder importing them as DMABUF, so a frame reaches the encoder without being copied.
///
/// A buffer normally goes back to the camera once the writer has written its frame. A `hold`
/// keeps it out longer: the camera gets it back when the writer has released it and every hold
/// has been released too, whichever comes last. The count is kept for every frame (one atomic
/// store when the capture thread hands the buffer on, one atomic decrement per release), so
/// lending needs nothing of the capture thread.
///
/// Thread-safe: `lend` from the capture thread, `hold` from the writer, `release` from the writer
/// and from whoever holds the buffer.
public final class SharedFrameBuffers: Sendable {
    /// The layout of every buffer: its length, and the bytes from one line to the next.
    public let count: Int
    public let length: Int
    public let bytesPerLine: Int
    private let holds: [Holds]
    private let export: @Sendable () -> [Int32]?
    private let exported = Mutex<[Int32]??>(nil)
    private let giveBack: @Sendable (Int32) -> Void
    private let readInPlace = Atomic<Bool>(false)

    final class Holds: Sendable { let count = Atomic<Int>(0) }

    /// - Parameters:
    ///   - export: the buffers as DMABUF file descriptors (the camera owns and closes them), or
    ///     nil when its driver cannot export them; called once, when first asked.
    ///   - giveBack: hands buffer `index` back to the camera (any thread).
    public init(
        count: Int, length: Int, bytesPerLine: Int, export: @escaping @Sendable () -> [Int32]?,
        giveBack: @escaping @Sendable (Int32) -> Void
    ) {
        self.count = count
        self.length = length
        self.bytesPerLine = bytesPerLine
        holds = (0..<count).map { _ in Holds() }
        self.export = export
        self.giveBack = giveBack
    }

    /// The buffers as DMABUF file descriptors, by buffer index, or nil when the camera's driver
    /// cannot export them. Exported on the first call.
    public func dmabufs() -> [Int32]? {
        exported.withLock { cached in
            if let cached { return cached }
            let descriptors = export()
            cached = .some(descriptors)
            return descriptors
        }
    }

    /// A device reads frames from the buffers themselves (an encoder imported them): they cannot
    /// be swapped for another camera's under it. Set by that device once its import worked.
    public func markReadInPlace() { readInPlace.store(true, ordering: .releasing) }

    /// Whether a device reads frames from the buffers themselves (`markReadInPlace`).
    public var isReadInPlace: Bool { readInPlace.load(ordering: .acquiring) }

    /// The capture thread hands buffer `index` to the writer: one hold, the writer's. Capture-bound.
    @inline(__always)
    public func lend(_ index: Int32) {
        holds[Int(index)].count.store(1, ordering: .releasing)
    }

    /// Keeps buffer `index` from the camera until a matching `release`. Only while another hold
    /// is on it (the writer's, during its write).
    public func hold(_ index: Int32) {
        holds[Int(index)].count.add(1, ordering: .relaxed)
    }

    /// The descriptors exported so far, without exporting (for the camera to close them).
    public var exportedDescriptors: [Int32]? { exported.withLock { $0 ?? nil } }

    /// Releases one hold on buffer `index`; the last gives it back to the camera.
    public func release(_ index: Int32) {
        guard index >= 0, Int(index) < holds.count else { return }
        if holds[Int(index)].count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            giveBack(index)
        }
    }
}

extension SharedFrameBuffers: Equatable {
    /// The same buffers: the same object.
    public static func == (left: SharedFrameBuffers, right: SharedFrameBuffers) -> Bool { left === right }
}
