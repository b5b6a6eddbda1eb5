import FieldcapSyncService
import Foundation
import SyncField
import Testing

/// An SDK-written session (no fieldcap sidecar): videos linked to files in the session.
func sdkSession(host: String, videos: [String], sensors: [String] = [], in parent: String) throws -> String {
    let path = "\(parent)/\(host)-session"
    let session = SyncSession(hostId: host, outputDir: path)
    try session.start()
    for frame in 0..<3 {
        for id in videos { try session.stamp(id, frameNumber: frame) }
        for id in sensors { try session.record(id, frameNumber: frame, channels: ["accel_x": Double(frame)]) }
    }
    for id in videos {
        let video = "\(path)/\(id).mp4"
        _ = FileManager.default.createFile(atPath: video, contents: Data("video of \(id)".utf8))
        session.link(id, path: video)
    }
    try session.stop()
    return path
}

func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "/syncservice-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// The body as plain JSON values, read back by Foundation's parser (not ours).
func jsonObject(_ body: SyncRequestBody) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(body.json().utf8)) as? [String: Any])
}

@Suite("The SyncField service's request from sessions")
struct SyncRequestTests {
    @Test("one SDK session: videos with paths, sensors marked, the first video (manifest order) primary")
    func oneSession() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "iphone_01", videos: ["cam_wrist", "cam_ego"], sensors: ["imu"], in: root)
        let request = try SyncRequest(sessions: [SessionSource(directory: path)])
        let body = try jsonObject(request.body(dataDirectory: "/data", timestampsDirectory: "/timestamps"))
        #expect(Set(body.keys) == ["hosts", "timestamps_dir"])
        #expect(body["timestamps_dir"] as? String == "/timestamps")
        let hosts = try #require(body["hosts"] as? [[String: Any]])
        #expect(hosts.count == 1)
        #expect(hosts[0]["host_id"] as? String == "iphone_01")
        let streams = try #require(hosts[0]["streams"] as? [[String: Any]])
        // No sidecar: the manifest's order, which the SDK writes sorted.
        #expect(streams.map { $0["stream_id"] as? String } == ["cam_ego", "cam_wrist", "imu"])
        #expect(streams[0]["path"] as? String == "/data/cam_ego.mp4")
        #expect(streams[0]["is_primary"] as? Bool == true)
        #expect(streams[1]["path"] as? String == "/data/cam_wrist.mp4")
        #expect(streams[1]["is_primary"] == nil)
        #expect(Set(streams[2].keys) == ["stream_id", "stream_type"])
        #expect(streams[2]["stream_type"] as? String == "sensor")
    }

    @Test("without --data-dir the paths are the files on this machine")
    func localPaths() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "rig", videos: ["cam0"], in: root)
        let body = try SyncRequest(sessions: [SessionSource(directory: path)])
            .body(dataDirectory: nil, timestampsDirectory: "/t")
        #expect(body.hosts[0].streams[0].path == "\(path)/cam0.mp4")
    }

    @Test("a session moved off the rig: its videos are found in the session by name")
    func movedSession() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "rig", videos: ["cam0"], in: root)
        let moved = "\(root)/moved"
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        let source = try SessionSource(directory: moved)
        #expect(source.streams[0].videoFile == "\(moved)/cam0.mp4")
    }

    @Test("several hosts make one body: sessions under DIR/SESSION, one primary across them")
    func severalHosts() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try sdkSession(host: "rig_a", videos: ["cam_a"], sensors: ["imu_a"], in: root)
        let b = try sdkSession(host: "rig_b", videos: ["cam_b"], in: root)
        let request = try SyncRequest(
            sessions: [SessionSource(directory: a), SessionSource(directory: b)], primary: "cam_b")
        let body = request.body(dataDirectory: "/data/", timestampsDirectory: "/ts")
        #expect(body.hosts.map(\.hostId) == ["rig_a", "rig_b"])
        #expect(body.hosts[0].streams[0].path == "/data/rig_a-session/cam_a.mp4")
        #expect(body.hosts[1].streams[0].path == "/data/rig_b-session/cam_b.mp4")
        let primaries = body.hosts.flatMap(\.streams).filter { $0.isPrimary == true }.map(\.streamId)
        #expect(primaries == ["cam_b"])
    }

    @Test("--primary: HOST/ID settles an id two hosts share; unknown and ambiguous ones are errors")
    func primaryChoice() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try SessionSource(
            directory: try sdkSession(host: "rig_a", videos: ["cam0"], sensors: ["imu"], in: root))
        let b = try SessionSource(directory: try sdkSession(host: "rig_b", videos: ["cam0"], in: root))
        #expect(throws: SyncRequestError.ambiguousPrimary("cam0", hosts: ["rig_a", "rig_b"])) {
            try SyncRequest(sessions: [a, b], primary: "cam0")
        }
        let chosen = try SyncRequest(sessions: [a, b], primary: "rig_b/cam0")
        #expect(chosen.primary.session == 1 && chosen.primary.stream == "cam0")
        #expect(chosen.sharedStreamIds == ["cam0"])
        #expect(throws: SyncRequestError.unknownPrimary("imu", known: ["rig_a/cam0", "rig_b/cam0"])) {
            try SyncRequest(sessions: [a, b], primary: "imu")
        }
    }

    @Test("two sessions of one host, or no video at all, are refused")
    func refusals() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let first = try sdkSession(host: "rig", videos: ["cam0"], in: root)
        let second = "\(root)/again"
        try FileManager.default.copyItem(atPath: first, toPath: second)
        #expect(throws: SyncRequestError.sameHost("rig", first: first, second: second)) {
            try SyncRequest(sessions: [SessionSource(directory: first), SessionSource(directory: second)])
        }
        let sensorsOnly = try sdkSession(host: "imu_rig", videos: [], sensors: ["imu"], in: root)
        #expect(throws: SyncRequestError.noVideo()) {
            try SyncRequest(sessions: [SessionSource(directory: sensorsOnly)])
        }
        #expect(throws: SyncRequestError.noSessions) { try SyncRequest(sessions: []) }
    }

    @Test("a session that cannot be read says which file is the matter")
    func unreadable() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "rig", videos: ["cam0"], sensors: ["imu"], in: root)
        try FileManager.default.removeItem(atPath: "\(path)/imu.jsonl")
        #expect(throws: SyncRequestError.unreadableSession(path, "stream imu: \(path)/imu.jsonl is missing")) {
            try SessionSource(directory: path)
        }
        try FileManager.default.removeItem(atPath: "\(path)/manifest.json")
        #expect(throws: (any Error).self) { try SessionSource(directory: path) }
        do {
            _ = try SessionSource(directory: path)
        } catch {
            #expect(error.description.contains("no manifest.json"))
        }
        _ = FileManager.default.createFile(atPath: "\(path)/manifest.json", contents: Data("{\"host_id\":".utf8))
        do {
            _ = try SessionSource(directory: path)
            Issue.record("a truncated manifest was read")
        } catch {
            #expect(error.description.contains("manifest.json is not JSON"))
        }
    }
}

@Suite("The SyncField service's upload form")
struct UploadFormTests {
    /// The form's bytes as they go out, every file read through FormBody.
    func bytes(of form: MultipartForm) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await buffer in FormBody(form: form) { out += buffer.readableBytesView }
        return out
    }

    @Test("parts in the README's order, parallel ids, exact length, files byte for byte")
    func layout() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let a = try SessionSource(
            directory: try sdkSession(host: "rig_a", videos: ["cam_ego"], sensors: ["imu"], in: root))
        let b = try SessionSource(directory: try sdkSession(host: "rig_b", videos: ["cam_b"], in: root))
        let form = try SyncRequest(sessions: [a, b]).uploadForm(boundary: "XyZ")
        let body = try await bytes(of: form)
        #expect(Int64(body.count) == form.length)
        #expect(form.contentType == "multipart/form-data; boundary=XyZ")
        let text = String(decoding: body, as: UTF8.self)
        let parts = text.components(separatedBy: "--XyZ")
        #expect(parts.first == "")
        #expect(parts.last == "--\r\n")
        let headers = parts.dropFirst().dropLast().map { $0.components(separatedBy: "\r\n\r\n")[0] }
        #expect(
            headers.map { $0.components(separatedBy: "\r\n")[1] } == [
                "Content-Disposition: form-data; name=\"files\"; filename=\"cam_ego.mp4\"",
                "Content-Disposition: form-data; name=\"files\"; filename=\"imu.jsonl\"",
                "Content-Disposition: form-data; name=\"files\"; filename=\"cam_b.mp4\"",
                "Content-Disposition: form-data; name=\"timestamp_files\"; filename=\"cam_ego.timestamps.jsonl\"",
                "Content-Disposition: form-data; name=\"timestamp_files\"; filename=\"imu.timestamps.jsonl\"",
                "Content-Disposition: form-data; name=\"timestamp_files\"; filename=\"cam_b.timestamps.jsonl\"",
                "Content-Disposition: form-data; name=\"stream_ids\"",
                "Content-Disposition: form-data; name=\"host_ids\"",
                "Content-Disposition: form-data; name=\"primary_id\"",
            ])
        #expect(text.contains("name=\"stream_ids\"\r\n\r\ncam_ego,imu,cam_b\r\n"))
        #expect(text.contains("name=\"host_ids\"\r\n\r\nrig_a,rig_a,rig_b\r\n"))
        #expect(text.contains("name=\"primary_id\"\r\n\r\ncam_ego\r\n"))
        let stamps = try String(contentsOfFile: "\(a.directory)/cam_ego.timestamps.jsonl", encoding: .utf8)
        #expect(text.contains("Content-Type: application/x-ndjson\r\n\r\n\(stamps)\r\n--XyZ"))
        #expect(text.contains("Content-Type: video/mp4\r\n\r\nvideo of cam_ego\r\n--XyZ"))
    }

    @Test("a file that shrinks after the form was laid out fails the upload, not pads it")
    func fileChanged() async throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "rig", videos: ["cam0"], in: root)
        let form = try SyncRequest(sessions: [SessionSource(directory: path)]).uploadForm()
        _ = FileManager.default.createFile(atPath: "\(path)/cam0.mp4", contents: Data("short".utf8))
        await #expect(throws: FormBodyError.self) { _ = try await bytes(of: form) }
    }

    @Test("a comma in a stream id cannot go into the comma-separated lists")
    func commaInId() throws {
        let root = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let path = try sdkSession(host: "rig", videos: ["cam,0"], in: root)
        #expect(throws: SyncRequestError.commaInId("cam,0")) {
            try SyncRequest(sessions: [SessionSource(directory: path)]).uploadForm()
        }
    }
}
