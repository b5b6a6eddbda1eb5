import FieldcapSession
import Foundation
import Testing

@testable import FieldcapCaptureServer

@Suite("The capture server's messages, as the AllSpark README documents them")
struct ServerMessageTests {
    @Test("clientConfig: chunk in ms, buffer in MiB, format kept as given")
    func clientConfig() {
        let message = ServerMessage.parse(
            #"{"type":"clientConfig","config":{"videoFormat":"mp4","videoChunkDurationMs":30000,"videoBufferMaxMB":16000}}"#
        )
        #expect(
            message
                == .clientConfig(
                    .init(
                        videoFormat: "mp4", chunkDuration: TimeSpan(seconds: 30),
                        bufferMax: ByteSize(bytes: 16000 << 20))))
        #expect(ServerMessage.parse(#"{"type":"clientConfig","config":{}}"#) == .clientConfig(.init()))
    }

    @Test("clientConfig with values that are not what they say is unusable, and says which")
    func badConfig() {
        for (text, why) in [
            (#"{"type":"clientConfig"}"#, "without a config object"),
            (#"{"type":"clientConfig","config":{"videoChunkDurationMs":"soon"}}"#, "videoChunkDurationMs"),
            (#"{"type":"clientConfig","config":{"videoChunkDurationMs":0}}"#, "videoChunkDurationMs"),
            (#"{"type":"clientConfig","config":{"videoBufferMaxMB":-5}}"#, "videoBufferMaxMB"),
            (#"{"type":"clientConfig","config":{"videoFormat":4}}"#, "videoFormat"),
        ] {
            guard case .unusable(let message) = ServerMessage.parse(text) else {
                Issue.record("\(text) was taken")
                continue
            }
            #expect(message.contains(why), "\(text): \(message)")
        }
    }

    @Test("record: without a duration, with seconds, with a span; a duration of neither is unusable")
    func record() {
        #expect(ServerMessage.parse(#"{"command":"record","message":"go"}"#) == .record(duration: nil))
        #expect(
            ServerMessage.parse(#"{"command":"record","duration":12.5}"#) == .record(duration: TimeSpan(seconds: 12.5)))
        #expect(
            ServerMessage.parse(#"{"command":"record","duration":"2m"}"#) == .record(duration: TimeSpan(seconds: 120)))
        guard case .unusable = ServerMessage.parse(#"{"command":"record","duration":"forever"}"#) else {
            Issue.record("a duration of 'forever' was taken")
            return
        }
    }

    @Test("uploadTimeRange: Unix seconds to nanoseconds; missing or reversed times are unusable")
    func uploadTimeRange() {
        #expect(
            ServerMessage.parse(#"{"command":"uploadTimeRange","startTime":1700000000.0,"endTime":1700000060.5}"#)
                == .uploadTimeRange(startNs: 1_700_000_000_000_000_000, endNs: 1_700_000_060_500_000_000))
        for text in [
            #"{"command":"uploadTimeRange","startTime":1700000060,"endTime":1700000000}"#,
            #"{"command":"uploadTimeRange","startTime":1700000000}"#,
            #"{"command":"uploadTimeRange","startTime":"noon","endTime":1700000060}"#,
        ] {
            guard case .unusable = ServerMessage.parse(text) else {
                Issue.record("\(text) was taken")
                continue
            }
        }
    }

    @Test("statuses, unknown commands and what is not the protocol at all")
    func others() {
        #expect(
            ServerMessage.parse(#"{"status":"success","message":"Video uploaded successfully"}"#)
                == .status("success", message: "Video uploaded successfully"))
        #expect(ServerMessage.parse(#"{"command":"dance"}"#) == .unknownCommand("dance"))
        #expect(ServerMessage.parse("[1,2]") == .unusable("not a JSON object"))
        #expect(ServerMessage.parse("{nope") == .unusable("not a JSON object"))
        #expect(ServerMessage.parse(#"{"command":7}"#) == .unusable("command is not a string"))
    }

    @Test("the rig's own messages: clientInfo, statuses, the upload's metadata")
    func clientMessages() throws {
        func object(_ text: String) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        }
        let info = try object(ClientMessage.clientInfo(name: "rig \"07\""))
        #expect(info["type"] as? String == "clientInfo" && info["clientName"] as? String == "rig \"07\"")
        let status = try object(ClientMessage.status(success: false, message: "no", answering: "record"))
        #expect(status["status"] as? String == "error" && status["command"] as? String == "record")
        let metadata = try object(
            ClientMessage.uploadMetadata(filename: "a.tar", filesize: 5_000_000_000, mimetype: "application/x-tar"))
        #expect((metadata["filesize"] as? NSNumber)?.int64Value == 5_000_000_000)
        #expect(Set(metadata.keys) == ["filename", "filesize", "mimetype"])
    }
}

@Suite("Answers to uploads, in order")
struct AnswerQueueTests {
    @Test("an answer that comes before the upload waits for it is kept; answers go in the order registered")
    func order() async {
        let queue = AnswerQueue()
        let first = queue.register(), second = queue.register()
        #expect(queue.deliver(.init(success: true, message: "one")))
        #expect(await queue.answer(first, timeout: .seconds(5)) == .init(success: true, message: "one"))
        async let waiting = queue.answer(second, timeout: .seconds(5))
        try? await Task.sleep(for: .milliseconds(50))
        #expect(queue.deliver(.init(success: false, message: "two")))
        #expect(await waiting == .init(success: false, message: "two"))
        #expect(!queue.deliver(.init(success: true, message: nil)))
    }

    @Test("a connection that ends, or a timeout, answers nil: the upload goes again")
    func lost() async {
        let queue = AnswerQueue()
        let place = queue.register()
        async let waiting = queue.answer(place, timeout: .seconds(30))
        try? await Task.sleep(for: .milliseconds(50))
        queue.failAll()
        #expect(await waiting == nil)
        let late = queue.register()
        #expect(await queue.answer(late, timeout: .milliseconds(50)) == nil)
        // Its place is gone: a late answer is not taken for it.
        #expect(!queue.deliver(.init(success: true, message: nil)))
    }
}
