import FieldcapSystem
import SyncField

/// Newline-delimited lines read from a stream socket, whole however the kernel cuts the stream:
/// what a feed's program and gpsd both send.
///
/// The bytes of a line not yet ended wait at the buffer's start; a line longer than the buffer is
/// reported once (`tooLong`) and its rest skipped to its end. Thread-bound (the reader's).
struct SocketLines {
    enum Event {
        /// A line, without its newline, valid during the call.
        case line(UnsafeRawBufferPointer)
        /// A line longer than the buffer, dropped whole.
        case tooLong
    }

    enum Outcome {
        /// Nothing had arrived.
        case nothing
        /// Bytes arrived; their complete lines were handed over.
        case read
        /// The peer closed (or the connection failed); `unfinishedLine` when a line was cut off.
        case ended(unfinishedLine: Bool)
    }

    let buffer: UnsafeMutableRawBufferPointer
    private var held = 0
    private var skipping = false

    init(buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    /// One read from `socket`: each complete line (or a too-long one) handed to `body` with the
    /// read's arrival time, `CLOCK_MONOTONIC_RAW` right after the read returned.
    mutating func read(from socket: StreamSocket, _ body: (Event, UInt64) -> Void) -> Outcome {
        switch socket.receive(into: UnsafeMutableRawBufferPointer(rebasing: buffer[held...])) {
        case .failure(let error) where error == .wouldBlock:
            return .nothing
        case .success(0), .failure:
            let unfinished = held > 0 && !skipping
            held = 0
            skipping = false
            return .ended(unfinishedLine: unfinished)
        case .success(let count):
            let arrivalNs = MonotonicClock.now()
            var start = 0
            let end = held + count
            var index = held
            while index < end {
                if buffer[index] == UInt8(ascii: "\n") {
                    if skipping {
                        skipping = false
                    } else {
                        body(.line(UnsafeRawBufferPointer(rebasing: buffer[start..<index])), arrivalNs)
                    }
                    start = index + 1
                }
                index += 1
            }
            held = end - start
            if held == buffer.count {
                if !skipping { body(.tooLong, arrivalNs) }
                skipping = true
                held = 0
            } else if held > 0 && start > 0 {
                buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: held)
            }
            return .read
        }
    }

    /// Forgets a line begun on a connection that is gone.
    mutating func reset() {
        held = 0
        skipping = false
    }
}
