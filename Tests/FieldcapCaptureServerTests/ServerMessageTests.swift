import FieldcapSession
import Foundation
import Testing

@testable import FieldcapCaptureServer

@Suite("The capture server's messages, as the AllSpark README documents them")
struct ServerMessageTests {
    @Test("clientConfig: chunk in ms, buffer in MiB, format kept as given")
    func clientConfig() {
        let message = ServerMessage.parse(
            #"{"type":"clientConfig","config":{"videoFormat":"mp4","#
                + #""videoChunkDurationMs":30000,"videoBufferMaxMB":16000}}"#
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
            // Apart in seconds, the same nanosecond once rounded: an empty range.
            #"{"command":"uploadTimeRange","startTime":1.0,"endTime":1.0000000001}"#,
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

    @Test(
        "an unusable value is named as Swift printed what the message was read into",
        arguments: [
            (
                #"{"type":"clientConfig","config":{"videoChunkDurationMs":"soon"}}"#,
                "clientConfig: videoChunkDurationMs soon is not a duration in milliseconds"
            ),
            (
                #"{"type":"clientConfig","config":{"videoBufferMaxMB":-5}}"#,
                "clientConfig: videoBufferMaxMB -5 is not a size in MB"
            ),
            (
                #"{"type":"clientConfig","config":{"videoChunkDurationMs":0.5}}"#,
                "clientConfig: videoChunkDurationMs 0.5 is not a duration in milliseconds"
            ),
            (
                #"{"command":"record","duration":null}"#,
                "record: duration JSONNull() is neither seconds nor a span like 30s"
            ),
            (
                #"{"command":"record","duration":[1,"a",1.5,true,null,{},{"k":"v"}]}"#,
                #"record: duration [1, "a", 1.5, true, FieldcapCore.JSONNull(), [:], ["k": "v"]] is neither "#
                    + "seconds nor a span like 30s"
            ),
            (
                #"{"command":"record","duration":false}"#,
                "record: duration false is neither seconds nor a span like 30s"
            ),
        ])
    func unusableNamesTheValue(text: String, message: String) {
        #expect(ServerMessage.parse(text) == .unusable(message))
    }

    @Test("the rig's messages, spelled out: Foundation's key order, numbers as their type, slashes bare")
    func clientMessageText() {
        #expect(
            ClientMessage.chunkSaved(
                startTime: 1_700_000_000.5, endTime: 1_700_000_010.5, camera: "cam/0", size: 1234, format: "mkv",
                fps: 30, width: 640, height: 480)
                == #"{"camera":"cam/0","dimensions":{"height":480,"width":640},"endTime":1700000010.5,"#
                + #""format":"mkv","fps":30,"size":1234,"startTime":1700000000.5,"type":"chunkSaved"}"#)
        #expect(
            ClientMessage.uploadMetadata(filename: "a.tar", filesize: 5_000_000_000, mimetype: "application/x-tar")
                == #"{"filename":"a.tar","filesize":5000000000,"mimetype":"application/x-tar","type":"upload"}"#)
        #expect(ClientMessage.clientInfo(name: "rig \"07\"") == #"{"clientName":"rig \"07\"","type":"clientInfo"}"#)
    }

    @Test("upload (the operator page's Force Sync Uploads) is a command; record needs no duration")
    func upload() {
        #expect(ServerMessage.parse(#"{"command":"upload","message":""}"#) == .upload)
        // What AllSpark's server forwards of a record: command and message, no duration.
        #expect(ServerMessage.parse(#"{"command":"record","message":""}"#) == .record(duration: nil))
    }

    @Test("the rig's own messages, as the AllSpark app sends them: clientInfo, upload metadata, chunkSaved")
    func clientMessages() throws {
        func object(_ text: String) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        }
        let info = try object(ClientMessage.clientInfo(name: "rig \"07\""))
        #expect(info["type"] as? String == "clientInfo" && info["clientName"] as? String == "rig \"07\"")
        let metadata = try object(
            ClientMessage.uploadMetadata(
                filename: "rig_1700000000.tar", filesize: 5_000_000_000, mimetype: "application/x-tar"))
        #expect((metadata["filesize"] as? NSNumber)?.int64Value == 5_000_000_000)
        // The server drops an upload whose metadata has no type "upload".
        #expect(Set(metadata.keys) == ["type", "filename", "filesize", "mimetype"])
        #expect(metadata["type"] as? String == "upload")
        let chunk = try object(
            ClientMessage.chunkSaved(
                startTime: 1_700_000_000.5, endTime: 1_700_000_010.5, camera: "cam0", size: 1234, format: "mkv",
                fps: 30, width: 640, height: 480))
        #expect(
            Set(chunk.keys) == ["type", "startTime", "endTime", "camera", "size", "format", "fps", "dimensions"])
        #expect(chunk["type"] as? String == "chunkSaved" && chunk["startTime"] as? Double == 1_700_000_000.5)
        #expect((chunk["dimensions"] as? [String: Any])?["width"] as? Double == 640)
        let bare = try object(
            ClientMessage.chunkSaved(
                startTime: 1, endTime: 2, camera: "cam0", size: 0, format: "mkv", fps: 30, width: nil, height: nil))
        #expect(bare["dimensions"] == nil)
    }
}

@Suite("The server's replies, each given to the upload it answers")
struct ReplyRouterTests {
    @Test("a reply that comes before the upload waits for it is kept")
    func early() async {
        let router = ReplyRouter()
        let place = router.expect()
        #expect(router.deliver(success: true, message: "Video uploaded successfully") == .answer)
        #expect(await router.outcome(place, timeout: .seconds(5)) == .stored("Video uploaded successfully"))
        #expect(router.deliver(success: true, message: "late") == .stray)
    }

    @Test(
        """
        acknowledgements of chunkSaved and complaints about other messages never \
        answer an upload; a refused metadata is the reason of the binary's reply
        """
    )
    func notAnswers() async {
        let router = ReplyRouter()
        let first = router.expect()
        async let firstOutcome = router.outcome(first, timeout: .seconds(5))
        try? await Task.sleep(for: .milliseconds(50))
        #expect(router.deliver(success: true, message: "Chunk saved info received") == .chunkAcknowledged)
        #expect(router.deliver(success: false, message: "Unknown message type") == .complaint)
        #expect(router.deliver(success: false, message: "Failed to write file") == .metadataRefused)
        #expect(router.deliver(success: false, message: "Metadata not received yet") == .answer)
        #expect(await firstOutcome == .refused("Failed to write file"))
        // The next upload gets its own reply, not one of the first's.
        let second = router.expect()
        #expect(router.deliver(success: true, message: "Chunk saved info received") == .chunkAcknowledged)
        #expect(router.deliver(success: true, message: "Video uploaded successfully") == .answer)
        #expect(await router.outcome(second, timeout: .seconds(5)) == .stored("Video uploaded successfully"))
    }

    @Test("a connection that ends loses the upload, or refuses it for its size (1009); a timeout loses it")
    func ended() async {
        let router = ReplyRouter()
        let place = router.expect()
        async let waiting = router.outcome(place, timeout: .seconds(30))
        try? await Task.sleep(for: .milliseconds(50))
        router.connectionEnded(tooLarge: false, why: "closed")
        #expect(await waiting == .lost("closed"))
        let big = router.expect()
        router.connectionEnded(tooLarge: true, why: "closed (1009)")
        #expect(await router.outcome(big, timeout: .seconds(5)) == .tooLarge)
        let slow = router.expect()
        guard case .lost = await router.outcome(slow, timeout: .milliseconds(50)) else {
            Issue.record("a timeout did not lose the upload")
            return
        }
        // Its place is gone: a late reply is not taken for it.
        #expect(router.deliver(success: true, message: "Video uploaded successfully") == .stray)
    }
}

@Suite("Uploads: retries back off, and stop")
struct UploadPolicyTests {
    @Test("2 s, 4 s, 8 s, ... doubling up to a minute; AllSpark's 300 MiB limit; five attempts")
    func backOff() {
        let policy = UploadQueue.Policy()
        #expect((1...8).map { policy.retryDelay(after: $0) } == [2, 4, 8, 16, 32, 60, 60, 60].map { .seconds($0) })
        #expect(policy.retryDelay(after: 1000) == .seconds(60))
        #expect(policy.maxMessageBytes == 314_572_800)
        #expect(policy.maxAttempts == 5)
    }

    @Test("a segment's range, back from the server as Unix seconds in a double, is the same range")
    func roundTrip() {
        let segment = RangeUpload(fromNs: 1_795_761_075_598_000_000, toNs: 1_795_761_085_598_000_000)
        let parsed = ServerMessage.parse(
            #"{"command":"uploadTimeRange","startTime":1795761075.598,"endTime":1795761085.598}"#)
        guard case .uploadTimeRange(let from, let to) = parsed else {
            Issue.record("\(parsed)")
            return
        }
        // Not exact: a double holds these to a few hundred nanoseconds.
        #expect(from != segment.fromNs || to != segment.toNs)
        let echoed = RangeUpload(fromNs: from, toNs: to)
        #expect(echoed.isSame(as: segment))
        #expect(segment.isCovered(by: echoed.fromNs...(echoed.toNs - 1)))
        #expect(!segment.isCovered(by: echoed.fromNs...(echoed.toNs - 20_000_000)))
        #expect(!RangeUpload(fromNs: segment.fromNs, toNs: segment.toNs + 5_000_000).isSame(as: segment))
    }

    @Test("a range is cut at the segment boundaries of its recording; without an index it stays whole")
    func split() throws {
        let directory = NSTemporaryDirectory() + "/split-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let whole = RangeUpload(fromNs: 1_700_000_000_500_000_000, toNs: 1_700_000_002_500_000_000)
        #expect(whole.split(byRecordingIndexOf: directory).count == 1)
        let index: [String: Any] = [
            "format": "fieldcap-recording/0.1", "fieldcap_version": "test", "host_id": "rig", "state": "complete",
            "segment_seconds": 1, "streams": [] as [Any],
            "segments": (0..<4).map { n in
                [
                    "number": n, "directory": "seg\(n)", "state": "complete",
                    "start_monotonic_raw_ns": n * 1_000_000_000, "end_monotonic_raw_ns": (n + 1) * 1_000_000_000,
                    "start_utc": "2023-11-14T22:13:2\(n).000Z", "end_utc": "2023-11-14T22:13:2\(n + 1).000Z",
                ] as [String: Any]
            },
        ]
        try JSONSerialization.data(withJSONObject: index).write(to: URL(fileURLWithPath: "\(directory)/recording.json"))
        let parts = whole.split(byRecordingIndexOf: directory)
        #expect(
            parts.map { [$0.fromNs, $0.toNs] } == [
                [1_700_000_000_500_000_000, 1_700_000_001_000_000_000],
                [1_700_000_001_000_000_000, 1_700_000_002_000_000_000],
                [1_700_000_002_000_000_000, 1_700_000_002_500_000_000],
            ])
    }
}
