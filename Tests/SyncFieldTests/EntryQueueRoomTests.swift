import Testing

@testable import SyncField

@Suite("the writer queue's room")
struct EntryQueueRoomTests {
    @Test("holdsFewer counts what was claimed and not yet drained: half a queue is half")
    func holdsFewer() throws {
        let queue = EntryQueue(capacity: 64)
        queue.reopen(epoch: 1)
        #expect(queue.holdsFewer(than: 32))
        for index in 0..<31 {
            try queue.enqueue(
                epoch: 1, QueueEntry(kind: .stamp, streamIndex: 0, frameNumber: index, captureNs: 1, uncertaintyNs: 1))
        }
        #expect(queue.holdsFewer(than: 32))
        try queue.enqueue(
            epoch: 1, QueueEntry(kind: .stamp, streamIndex: 0, frameNumber: 31, captureNs: 1, uncertaintyNs: 1))
        #expect(!queue.holdsFewer(than: 32))
        #expect(queue.drain(limit: 8) { _, _ in } == 8)
        #expect(queue.holdsFewer(than: 32))
        #expect(!queue.holdsFewer(than: 24))
        queue.reopen(epoch: 2)
        #expect(queue.holdsFewer(than: 1))
    }
}
