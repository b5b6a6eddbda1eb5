import FieldcapCore
import FieldcapSystem
import Foundation
import SyncField
import Testing

@testable import FieldcapPreview

@Suite("Frame tap")
struct FrameTapTests {
    static let format = VideoFormat(width: 4, height: 2, pixelFormat: .yuyv)

    func record(_ sequence: UInt64) -> CaptureRecord {
        var record = CaptureRecord()
        record.sequence = sequence
        record.captureNs = 1000 + sequence
        return record
    }

    @Test("a frame is copied only when asked for, once, and the writer's bytes are not kept")
    func handOff() throws {
        let tap = FrameTap(streamId: "cam", format: Self.format)
        let stop = Latch()
        var bytes = [UInt8](repeating: 7, count: 16)
        bytes.withUnsafeBytes { tap.offer(record(1), bytes: $0) }
        #expect(!tap.wait(milliseconds: 0, orUntil: stop), "nothing was asked for")
        tap.request(bytes: 16)
        bytes.withUnsafeBytes { tap.offer(record(2), bytes: $0) }
        bytes = [UInt8](repeating: 9, count: 16)
        bytes.withUnsafeBytes { tap.offer(record(3), bytes: $0) }
        #expect(tap.wait(milliseconds: 1000, orUntil: stop))
        let seen = tap.withFrame { frame, info in (Array(frame), info) }
        #expect(seen?.0 == [UInt8](repeating: 7, count: 16))
        #expect(seen?.1 == FrameTap.Frame(captureNs: 1002, sequence: 2, byteCount: 16))
        // Taken: idle until the next request.
        #expect(tap.withFrame { _, _ in true } == nil)
        bytes.withUnsafeBytes { tap.offer(record(4), bytes: $0) }
        #expect(!tap.wait(milliseconds: 0, orUntil: stop))
    }

    @Test("a frame bigger than the buffer is skipped, and the next request makes room for it")
    func grows() throws {
        let tap = FrameTap(streamId: "cam", format: VideoFormat(width: 4, height: 2, pixelFormat: .mjpeg))
        let stop = Latch()
        tap.request(bytes: 8)
        let big = [UInt8](repeating: 1, count: 10_000)
        big.withUnsafeBytes { tap.offer(record(1), bytes: $0) }
        #expect(!tap.wait(milliseconds: 0, orUntil: stop))
        tap.request(bytes: 8)
        big.withUnsafeBytes { tap.offer(record(2), bytes: $0) }
        #expect(tap.wait(milliseconds: 1000, orUntil: stop))
        #expect(tap.withFrame { frame, info in frame.count == 10_000 && info.sequence == 2 } == true)
    }

    @Test("a request for a capture time passes over the frames before it")
    func notBefore() throws {
        let tap = FrameTap(streamId: "cam", format: Self.format)
        let stop = Latch()
        tap.request(bytes: 16, notBeforeNs: 1005)
        let bytes = [UInt8](repeating: 3, count: 16)
        for sequence in UInt64(1)...7 { bytes.withUnsafeBytes { tap.offer(record(sequence), bytes: $0) } }
        #expect(tap.wait(milliseconds: 1000, orUntil: stop))
        #expect(tap.withFrame { _, info in info.sequence } == 5)
    }

    @Test("a withdrawn request takes nothing more")
    func cancel() throws {
        let tap = FrameTap(streamId: "cam", format: Self.format)
        tap.request(bytes: 16)
        tap.cancel()
        let bytes = [UInt8](repeating: 1, count: 16)
        bytes.withUnsafeBytes { tap.offer(record(1), bytes: $0) }
        #expect(!tap.wait(milliseconds: 0, orUntil: Latch()))
    }
}
