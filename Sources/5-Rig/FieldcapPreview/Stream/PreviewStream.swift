import CFieldcapLinux
import FieldcapCore
import FieldcapEncode
import FieldcapFaces
import FieldcapSystem
import FoundationEssentials
import SyncField
import Synchronization

/// The live preview of one camera: a thread that, while anyone watches, takes a frame from the
/// stream's writer (`FrameTap`), encodes it, and hands it to every viewer; at most `maxRate`
/// frames a second by their capture times, and fewer when encoding takes longer (it never queues
/// frames). With no viewer the thread sleeps and the tap is never asked.
///
/// With faces to cover, each frame's faces are found and pixelated before it is encoded, on the
/// preview's thread (every frame shown is looked at; a face stays covered half a second after the
/// detector last saw it): the preview's rate falls when detection takes longer, capture never
/// waits. Such a preview takes the raw frames even from a camera recorded as JPEG.
///
/// Thread-safe.
public final class PreviewStream: Sendable {
    public let id: String
    public let format: VideoFormat
    public let tap: FrameTap
    public let maxRate: Double
    public let quality: Int
    /// The camera's frame rate, to take frames at `maxRate` without missing one by jitter.
    public let cameraRate: Double
    /// Cover the faces in every frame shown (nil: as captured).
    public let faces: FaceCover.Settings?

    private let state = Mutex<State>(State())
    private let viewerArrived = Doorbell()
    private let closing = Latch()
    private let thread = Mutex<DedicatedThread?>(nil)
    /// Called when the viewers go from none to some, or back (the rig opens its cameras for a
    /// preview when no recording has them open).
    private let onViewers: @Sendable () -> Void

    struct State {
        var viewers: [UInt64: AsyncStream<PreviewFrame>.Continuation] = [:]
        var nextViewer: UInt64 = 0
        var latest: PreviewFrame?
        var encoded: UInt64 = 0
        var encodeNs: UInt64 = 0
        var failure: String?
        var facesReport: FaceCoverReport?
    }

    /// What the preview has done so far.
    public struct Statistics: Sendable, Equatable {
        public var viewers: Int
        public var framesEncoded: UInt64
        /// Mean time to encode one frame, in seconds (0 before the first).
        public var meanEncodeSeconds: Double
        /// The last encoding error, if frames failed.
        public var failure: String?
        /// What covering the faces did so far (nil when they are not covered).
        public var faces: FaceCoverReport?
    }

    /// Refused (the reason is the error's description) for a format the preview cannot encode,
    /// or whose faces cannot be covered, or without the face detector.
    public init(
        id: String, format: VideoFormat, maxRate: Double = 10, quality: Int = 80, cameraRate: Double = 30,
        faces: FaceCover.Settings? = nil, onViewers: @escaping @Sendable () -> Void = {}
    ) throws {
        // Checked here, so a stream that exists can encode, and cover.
        _ = try JPEGEncoder(format: format, quality: quality)
        if let faces {
            switch StoredFrameCover.layout(stored: format, captured: nil) {
            case .success: break
            case .failure(let problem): throw FaceCoverError("its faces cannot be covered: \(problem)")
            }
            _ = try MTCNNFaceDetector(minFace: faces.minFace)
        }
        self.id = id
        self.format = format
        self.maxRate = maxRate
        self.quality = quality
        self.cameraRate = cameraRate
        self.faces = faces
        self.onViewers = onViewers
        tap = FrameTap(streamId: id, format: format, wantsRawFrames: faces != nil)
        thread.withLock {
            $0 = DedicatedThread(name: "fc-preview-\(id)") { [self] in run() }
        }
    }

    /// Ends the thread. The streams of viewers still watching finish.
    public func close() {
        closing.open()
        let finished = thread.withLock { thread -> DedicatedThread? in
            defer { thread = nil }
            return thread
        }
        finished?.join()
        let viewers = state.withLock { state in
            defer { state.viewers = [:] }
            return Array(state.viewers.values)
        }
        for viewer in viewers { viewer.finish() }
    }

    public var viewerCount: Int { state.withLock { $0.viewers.count } }

    public var statistics: Statistics {
        state.withLock {
            Statistics(
                viewers: $0.viewers.count, framesEncoded: $0.encoded,
                meanEncodeSeconds: $0.encoded == 0 ? 0 : Double($0.encodeNs) / Double($0.encoded) / 1e9,
                failure: $0.failure, faces: $0.facesReport)
        }
    }

    /// Every frame from now on, newest first when the viewer is slower than the preview (it
    /// keeps one). The viewer counts while the stream is iterated.
    public func frames() -> AsyncStream<PreviewFrame> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: PreviewFrame.self, bufferingPolicy: .bufferingNewest(1))
        if closing.isOpen {
            continuation.finish()
            return stream
        }
        let (viewer, first) = state.withLock { state in
            state.nextViewer += 1
            state.viewers[state.nextViewer] = continuation
            return (state.nextViewer, state.viewers.count == 1)
        }
        continuation.onTermination = { [weak self] _ in self?.remove(viewer) }
        if first {
            viewerArrived.ring()
            onViewers()
        }
        return stream
    }

    private func remove(_ viewer: UInt64) {
        let last = state.withLock { state -> Bool in
            guard state.viewers.removeValue(forKey: viewer) != nil else { return false }
            return state.viewers.isEmpty
        }
        if last { onViewers() }
    }

    /// A frame no older than `maxAge` seconds: the latest, or the next one, waiting up to
    /// `timeout` seconds for it. nil when none came.
    public func snapshot(maxAge: Double = 1, timeout: Double = 5) async -> PreviewFrame? {
        if let latest = state.withLock({ $0.latest }),
            Double(MonotonicClock.now() &- latest.encodedNs) / 1e9 <= maxAge
        {
            return latest
        }
        let frames = frames()
        return await withTaskGroup(of: PreviewFrame?.self) { group in
            group.addTask {
                for await frame in frames { return frame }
                return nil
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(timeout * 1e9))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The preview's thread: waits for a viewer, then asks the tap for a frame captured a period
    /// (`1 / maxRate`) after the last one, encodes it and hands it out.
    private func run() {
        guard let encoder = try? JPEGEncoder(format: format, quality: quality) else { return }
        // What covers the faces (this thread's own), in a copy of the frame: an MJPEG camera's
        // decoded, covered and written again at the preview's quality.
        var cover: StoredFrameCover?
        if let faces {
            do {
                // Live: each frame shown as it comes, never held back to look ahead.
                var live = faces.holding(rate: maxRate)
                live.lookAhead = 0
                cover = try StoredFrameCover(stored: format, settings: live, quality: quality)
            } catch {
                state.withLock { $0.failure = "\(error): no frame is shown uncovered" }
                return
            }
        }
        // Below the capture and writer threads: on a small CPU the preview is what waits.
        _ = CFieldcapLinux_nice_thread(10)
        let periodNs = UInt64(1e9 / max(0.1, maxRate))
        // Half a camera frame early: the frame due at the period's end is taken, not the next.
        let slackNs = min(periodNs / 2, UInt64(0.5e9 / max(0.1, cameraRate)))
        let frameBytes = format.pixelFormat.frameBytes(width: format.width, height: format.height) ?? 256 << 10
        var notBeforeNs: UInt64 = 0
        while !closing.isOpen {
            if viewerCount == 0 {
                tap.cancel()
                notBeforeNs = 0
                _ = viewerArrived.wait(milliseconds: 1000, orUntil: closing)
                continue
            }
            tap.request(bytes: frameBytes, notBeforeNs: notBeforeNs)
            // No frame within the wait: no capture runs, or the camera stalls; ask again. Capture
            // times are CLOCK_MONOTONIC_RAW in every capture, so the time asked for is never
            // more than a period ahead of now, unless a source's clock jumped: then any frame.
            guard tap.wait(milliseconds: 500, orUntil: closing) else {
                if notBeforeNs > MonotonicClock.now() &+ periodNs { notBeforeNs = 0 }
                continue
            }
            let started = MonotonicClock.now()
            let result = tap.withFrame { bytes, frame -> Result<([UInt8], FrameTap.Frame), PreviewError> in
                guard let cover else {
                    // A recording's JPEG of the frame (encode=jpeg) is shown as it is.
                    return Result { () throws(EncodeError) in
                        (frame.isJPEG ? Array(bytes) : try encoder.encode(bytes), frame)
                    }.mapError { PreviewError($0.description) }
                }
                // Faces are covered in a copy: the tap's buffer stays the frame the writer gave.
                // A frame here is a JPEG only from an MJPEG camera (a recording that encodes JPEG
                // still hands a covering preview its raw frames).
                let settled: [(bytes: [UInt8], covered: [FaceBox])]
                do throws(FaceCoverError) { settled = try cover.push(Array(bytes)) } catch {
                    return .failure(PreviewError("covering the faces: \(error)"))
                }
                // The live cover looks ahead by no frame: each comes back at once.
                guard let shown = settled.first else { return .failure(PreviewError("the cover held a frame back")) }
                if format.pixelFormat == .mjpeg { return .success((shown.bytes, frame)) }
                do {
                    return .success((try shown.bytes.withUnsafeBytes { try encoder.encode($0) }, frame))
                } catch {
                    return .failure(PreviewError("\(error)"))
                }
            }
            let encodedNs = MonotonicClock.now()
            if let cover { state.withLock { $0.facesReport = cover.report } }
            switch result {
            case .success(let (jpeg, frame))?:
                publish(jpeg: jpeg, frame: frame, startedNs: started, encodedNs: encodedNs)
                notBeforeNs = frame.captureNs &+ periodNs &- slackNs
            case .failure(let error)?:
                state.withLock { $0.failure = error.description }
            case nil:
                continue
            }
        }
        tap.cancel()
    }

    private func publish(jpeg: [UInt8], frame: FrameTap.Frame, startedNs: UInt64, encodedNs: UInt64) {
        state.withLock { state in
            state.encoded += 1
            state.encodeNs += encodedNs &- startedNs
            let preview = PreviewFrame(
                streamId: id, jpeg: jpeg, width: format.width, height: format.height, captureNs: frame.captureNs,
                sequence: frame.sequence, number: state.encoded, encodedNs: encodedNs)
            state.latest = preview
            for viewer in state.viewers.values { viewer.yield(preview) }
        }
    }
}

/// Why a preview frame was not shown.
struct PreviewError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
