import Dispatch
import FieldcapCore
import FieldcapEncode
import FieldcapMedia
import FieldcapSystem
import SyncField
import Synchronization

/// A camera's frames from its Matroska file, one at a time on request: libmatroska's reader calls
/// back with each frame, and an export that interleaves several cameras and an IMU in time order
/// must pull them. The reading runs on a thread of its own, at most `depth` frames ahead, so
/// reading the file overlaps with encoding what was read.
///
/// Thread-safe: the reading thread and one consumer.
final class FrameFeed: @unchecked Sendable {
    struct Frame {
        var bytes: [UInt8]
        /// The frame's index in the file.
        var index: Int
    }

    let path: String
    private let ffv1: VideoFormat?
    private let ready = DispatchSemaphore(value: 0)
    private let room: DispatchSemaphore
    private let state = Mutex(State())
    private var thread: DedicatedThread?

    private struct State {
        var frames: [Frame] = []
        var finished = false
        var failure: ExportError?
        var cancelled = false
    }

    /// `decodingFFV1To`: the captured format of a video stored as FFV1, whose frames are decoded
    /// to it on the reading thread.
    init(path: String, decodingFFV1To ffv1: VideoFormat? = nil, depth: Int = 3) {
        self.path = path
        self.ffv1 = ffv1
        // Made at 0 and raised: libdispatch traps when a semaphore is freed below the value it
        // was made with, which a cancelled feed's can be.
        room = DispatchSemaphore(value: 0)
        for _ in 0..<depth { room.signal() }
        thread = DedicatedThread(name: "fc-export-read") { [self] in read() }
    }

    deinit { cancel() }

    /// The next frame; nil at the end of the file. Throws when the file cannot be read.
    func next() throws(ExportError) -> Frame? {
        ready.wait()
        let (frame, failure) = state.withLock { state -> (Frame?, ExportError?) in
            if !state.frames.isEmpty { return (state.frames.removeFirst(), nil) }
            return (nil, state.failure)
        }
        if let failure { throw failure }
        if frame != nil { room.signal() } else { ready.signal() }  // the end stays the end
        return frame
    }

    /// Stops reading (an export that ends early) and waits for the thread.
    func cancel() {
        guard let thread else { return }
        state.withLock { $0.cancelled = true }
        room.signal()
        thread.join()
        self.thread = nil
    }

    private func read() {
        var index = 0
        var decodeFailure: ExportError?
        do {
            let decoder = try ffv1.map { format throws(ExportError) in
                do {
                    return try FFV1Decoder(format: format, codecPrivate: MatroskaFrames.codecPrivate(in: path))
                } catch let error as EncodeError {
                    throw ExportError(.session, "\(path) cannot be decoded: \(error)")
                } catch {
                    throw ExportError(.session, "\(path) cannot be read: \(error)")
                }
            }
            try MatroskaFrames.forEach(in: path) { bytes, _ in
                room.wait()
                var frame = Frame(bytes: [], index: index)
                if let decoder {
                    do { frame.bytes = try decoder.decode(bytes) } catch {
                        decodeFailure = ExportError(.session, "\(path) frame \(index) does not decode: \(error)")
                        return false
                    }
                } else {
                    frame.bytes = Array(bytes)
                }
                index += 1
                let go = state.withLock { state -> Bool in
                    guard !state.cancelled else { return false }
                    state.frames.append(frame)
                    return true
                }
                if go { ready.signal() }
                return go
            }
            if let decodeFailure { throw decodeFailure }
        } catch let error as ExportError {
            state.withLock { $0.failure = error }
        } catch {
            state.withLock { $0.failure = ExportError(.session, "\(path) cannot be read: \(error)") }
        }
        state.withLock { $0.finished = true }
        ready.signal()
    }
}
