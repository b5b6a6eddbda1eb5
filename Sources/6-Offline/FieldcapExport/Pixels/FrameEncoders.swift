import Dispatch
import FoundationEssentials

/// Encodes a batch of frames into image files on every core: a PNG or JPEG of a camera frame
/// costs milliseconds, the reading and the writing of its file microseconds. Each worker owns
/// its encoder (libjpeg-turbo handles and plane buffers are per thread); a batch's results come
/// back in the batch's order.
///
/// Thread-bound (the exporter's); the workers run only inside `encode`.
final class FrameEncoders<Output> {
    typealias Encode = ([UInt8]) throws(ExportError) -> Output

    let workers: Int
    private let encoders: [Encode]

    /// `make` is called once per worker.
    init(
        workers: Int = max(1, min(8, ProcessInfo.processInfo.activeProcessorCount)),
        make: () throws(ExportError) -> Encode
    )
        throws(ExportError)
    {
        self.workers = workers
        var encoders: [Encode] = []
        for _ in 0..<workers { encoders.append(try make()) }
        self.encoders = encoders
    }

    /// The frames' outputs, in order; the first failure, if any.
    func encode(_ frames: [[UInt8]]) throws(ExportError) -> [Output] {
        if workers == 1 || frames.count == 1 {
            var outputs: [Output] = []
            for frame in frames { outputs.append(try encoders[0](frame)) }
            return outputs
        }
        let results = UnsafeMutableBufferPointer<Result<Output, ExportError>?>.allocate(capacity: frames.count)
        results.initialize(repeating: nil)
        defer {
            _ = results.deinitialize()
            results.deallocate()
        }
        // Worker w takes frames w, w + workers, ... and writes only their result slots, and each
        // encoder is used by its one worker: what the workers share is never shared mutably.
        let shared = WorkerShared(encoders: encoders, results: results)
        let workers = self.workers
        DispatchQueue.concurrentPerform(iterations: min(workers, frames.count)) { worker in
            for index in stride(from: worker, to: frames.count, by: workers) {
                do throws(ExportError) {
                    shared.results[index] = .success(try shared.encoders[worker](frames[index]))
                } catch {
                    shared.results[index] = .failure(error)
                }
            }
        }
        var outputs: [Output] = []
        outputs.reserveCapacity(frames.count)
        for result in results { outputs.append(try result!.get()) }
        return outputs
    }
}

/// What `encode`'s workers share: each reads its own encoder and writes its own result slots.
private struct WorkerShared<Output>: @unchecked Sendable {
    let encoders: [FrameEncoders<Output>.Encode]
    let results: UnsafeMutableBufferPointer<Result<Output, ExportError>?>
}
