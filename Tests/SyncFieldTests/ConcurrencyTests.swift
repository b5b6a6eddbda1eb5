import Foundation
import Testing

@testable import SyncField

@Suite("Concurrency")
struct ConcurrencyTests {
    /// Reads `frame_number` and `capture_ns` back from a line.
    static func fields(_ line: String) -> (frame: Int, capture: UInt64)? {
        guard let frameRange = line.range(of: #""frame_number":"#),
            let captureRange = line.range(of: #"{"capture_ns":"#)
        else { return nil }
        let frame = Int(line[frameRange.upperBound...].prefix { $0 == "-" || $0.isNumber })
        let capture = UInt64(line[captureRange.upperBound...].prefix { $0.isNumber })
        guard let frame, let capture else { return nil }
        return (frame, capture)
    }

    @Test("threads on their own streams: every line present, each stream in call order")
    func ownStreams() throws {
        let directory = TemporaryDirectory()
        var options = SyncSession.Options()
        options.queueCapacity = 256  // small, so producers also meet a full queue
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        let perThread = 20_000
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            let id = "s\(thread)"
            for frame in 0..<perThread {
                if thread % 2 == 0 {
                    try! session.stamp(id, frameNumber: frame)
                } else {
                    try! session.record(id, frameNumber: frame, channels: ["v": Double(frame), "t": thread])
                }
            }
        }
        let counts = try session.stop()
        #expect(counts == ["s0": perThread, "s1": perThread, "s2": perThread, "s3": perThread])
        for thread in 0..<4 {
            let lines = directory.lines("s\(thread).timestamps.jsonl")
            let parsed = lines.compactMap(Self.fields)
            #expect(parsed.map(\.frame) == Array(0..<perThread))
            #expect(zip(parsed, parsed.dropFirst()).allSatisfy { $0.capture <= $1.capture })
            if thread % 2 == 1 {
                let sensor = directory.lines("s\(thread).jsonl")
                #expect(sensor.compactMap(Self.fields).map(\.frame) == Array(0..<perThread))
                #expect(sensor.last?.contains(#""channels":{"t":\#(thread),"v":\#(perThread - 1)}"#) == true)
            }
        }
    }

    @Test("threads sharing one stream: every line once, each thread's calls in its own order")
    func sharedStream() throws {
        let directory = TemporaryDirectory()
        var options = SyncSession.Options()
        options.queueCapacity = 128
        let session = SyncSession(hostId: "h", outputDir: directory.path, options: options)
        try session.start()
        let perThread = 10_000
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<perThread {
                // The frame number says who called and in which order.
                try! session.stamp("shared", frameNumber: thread * 1_000_000 + index)
            }
        }
        #expect(try session.stop() == ["shared": 4 * perThread])
        let frames = directory.lines("shared.timestamps.jsonl").compactMap(Self.fields).map(\.frame)
        #expect(frames.count == 4 * perThread)
        #expect(Set(frames).count == frames.count)
        for thread in 0..<4 {
            let own = frames.filter { $0 / 1_000_000 == thread }.map { $0 % 1_000_000 }
            #expect(own == Array(0..<perThread))
        }
    }

    @Test("stop() while threads are still calling: every accepted call is written, the rest are refused")
    func stopDuringCalls() throws {
        for round in 0..<3 {
            let directory = TemporaryDirectory()
            let session = SyncSession(hostId: "h", outputDir: directory.path)
            try session.start()
            let accepted = (0..<3).map { _ in ManagedCounter() }
            let group = DispatchGroup()
            let running = DispatchSemaphore(value: 0)
            for thread in 0..<3 {
                DispatchQueue.global().async(group: group) {
                    var frame = 0
                    // Bounded, so a thread the scheduler favours cannot write gigabytes.
                    while frame < 300_000 {
                        do {
                            try session.stamp("s\(thread)", frameNumber: frame)
                            frame += 1
                            if frame == 100 { running.signal() }
                        } catch {
                            #expect(error as? SyncFieldError == .sessionNotStarted)
                            break
                        }
                    }
                    accepted[thread].value = frame
                }
            }
            for _ in 0..<3 { running.wait() }
            usleep(UInt32(round * 2_000))
            let counts = try session.stop()
            group.wait()
            for thread in 0..<3 {
                let lineCount = SyncSession.countLines(path: directory.file("s\(thread).timestamps.jsonl"))
                #expect(counts["s\(thread)"] == accepted[thread].value)
                #expect(lineCount == accepted[thread].value)
            }
        }
    }
}

final class ManagedCounter: @unchecked Sendable {
    var value = 0
}
