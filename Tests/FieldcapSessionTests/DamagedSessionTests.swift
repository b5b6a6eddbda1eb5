import FieldcapCore
import FieldcapSession
import Foundation
import SyncField
import TestSupport
import Testing

@testable import FieldcapMedia

/// Damaged sessions against the readers and `recover` (#42, items 4 to 6): no crash, a clear
/// problem, and recover never cutting or deleting what it cannot account for.
@Suite("Damaged sessions: readers never crash, recover never destroys")
struct DamagedSessionTests {

    private func patch(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes))
    }

    @Test("the EBML magic flipped: scan, frames, finish in place and validate say 'not Matroska', no crash")
    func flippedMagic() throws {
        let path = try KilledSession.make()
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Finished first, so that validate has a manifest to check the video against.
        _ = try SessionFinisher.recover(directory: path) { _ in }
        let video = "\(path)/cam.mkv"
        let original = try Data(contentsOf: URL(fileURLWithPath: video))
        for variant in 0..<5 {
            var damaged = original
            for byte in 0..<4 where variant == 4 || byte == variant { damaged[byte] ^= 0xFF }
            try damaged.write(to: URL(fileURLWithPath: video))
            let scan = try MatroskaScan(path: video)
            #expect(!scan.isMatroska && scan.frames.isEmpty, "variant \(variant)")
            var frames = 0
            try MatroskaFrames.forEachFrame(in: video) { _ in
                frames += 1
                return true
            }
            #expect(frames == 0)
            #expect(try !MatroskaSalvage.finishInPlace(path: video, keeping: 0, nominalRate: 30))
            #expect(try Data(contentsOf: URL(fileURLWithPath: video)) == damaged)
            let problems = SessionValidator.validateWithVideos(directory: path).problems.map(\.description)
            #expect(problems.contains { $0.contains("cam.mkv is not a Matroska file") }, "\(problems)")
        }
    }

    @Test("recover refuses a video whose header is damaged and changes no file of the session")
    func damagedHeaderLeftAlone() throws {
        let path = try KilledSession.make()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let video = "\(path)/cam.mkv"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        // Inside the DocType ("matroska"): the case #42 saw shrink a video to 181 bytes.
        let docType = try #require(bytes.firstRange(of: Data("matroska".utf8)))
        try patch(video, at: docType.lowerBound + 3, [UInt8(ascii: "X")])
        let before = try SessionDamage.contents(path)
        let error = #expect(throws: CameraRecovery.Refusal.self) {
            try SessionFinisher.recover(directory: path) { _ in }
        }
        #expect(error?.description.contains("is not a readable Matroska file") == true)
        #expect(error?.description.contains("left as it was") == true)
        #expect(try SessionDamage.contents(path) == before)
    }

    @Test("recover refuses damage in the middle of a video rather than cutting the frames after it")
    func damageInTheMiddleLeftAlone() throws {
        // 100 frames of 320x240: more than the two seconds of frames a kill can leave unreadable.
        let path = try KilledSession.make(frames: 100, width: 320, height: 240)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let video = "\(path)/cam.mkv"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: video))
        var clusters: [Int] = []
        var from = bytes.startIndex
        while let found = bytes[from...].firstRange(of: Data([0x1F, 0x43, 0xB6, 0x75])) {
            clusters.append(found.lowerBound)
            from = found.upperBound
        }
        #expect(clusters.count == 100)
        // The fourth Cluster's ID zeroed: the frames are read up to it, 97 whole frames before the end.
        try patch(video, at: clusters[3], [0, 0, 0, 0])
        let before = try SessionDamage.contents(path)
        let error = #expect(throws: CameraRecovery.Refusal.self) {
            try SessionFinisher.recover(directory: path) { _ in }
        }
        #expect(error?.description.contains("after its 3 readable frames") == true, "\(String(describing: error))")
        #expect(try SessionDamage.contents(path) == before)
    }

    @Test("a killed session with a whole video still recovers (the refusal is for damage only)")
    func killedSessionStillRecovers() throws {
        let path = try KilledSession.make()
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { _ in }) else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        #expect(try MatroskaScan(path: "\(path)/cam.mkv").frames.count == 30)
    }

    @Test(
        """
        a recorder killed before it made a camera's video (missing, or \
        cut in its header) recovers with an empty video of the track
        """,
        arguments: ["missing", "empty", "cut in its header"])
    func killedBeforeTheVideo(video state: String) throws {
        let path = try KilledSession.make(frames: 0)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let video = "\(path)/cam.mkv"
        switch state {
        case "missing": try FileManager.default.removeItem(atPath: video)
        case "empty": try Data().write(to: URL(fileURLWithPath: video))
        default:
            try Data(try Data(contentsOf: URL(fileURLWithPath: video)).prefix(20)).write(
                to: URL(fileURLWithPath: video))
        }
        for file in ["cam.timestamps.jsonl", "cam.frames.ndjson"] {
            try? FileManager.default.removeItem(atPath: "\(path)/\(file)")
        }
        let recovered = Result { try SessionFinisher.recover(directory: path, say: { _ in }) }
        if state == "cut in its header" {
            // A header cut short is not one a kill leaves empty: bytes recover cannot read stay.
            #expect(throws: CameraRecovery.Refusal.self) { try recovered.get() }
            return
        }
        guard case .recovered(let report) = try recovered.get() else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid, "\(report.problems)")
        let scan = try MatroskaScan(path: video)
        #expect(scan.isMatroska && scan.hasVideoTrack && scan.frames.isEmpty)
    }

    @Test("a copied session is judged by its own video, not the original's its manifest names")
    func copiedSessionUsesItsOwnFiles() throws {
        let path = try KilledSession.make()
        defer { try? FileManager.default.removeItem(atPath: path) }
        guard case .recovered(let report) = try SessionFinisher.recover(directory: path, say: { _ in }) else {
            Issue.record("not recovered")
            return
        }
        #expect(report.isValid)
        let copy = path + "-copy"
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        // The copy's video cut to its header: the original, still there, must not stand in.
        let handle = try #require(FileHandle(forUpdatingAtPath: "\(copy)/cam.mkv"))
        try handle.truncate(atOffset: 300)
        try handle.close()
        let problems = SessionValidator.validateWithVideos(directory: copy).problems.map(\.description)
        #expect(problems.contains { $0.contains("frame_count is 30 but cam.mkv holds 0 frames") }, "\(problems)")
        #expect(SessionValidator.validateWithVideos(directory: path).isValid)
    }
}

/// The damaged-session suites' fixture, written once for both.
enum KilledSession {
    /// A killed recording: one camera (grey, 30 fps, `frames` frames) with its timestamp lines
    /// and frame log, fieldcap.json still "recording", no manifest; written with the recorder's
    /// own sink so the files are laid out as a rig's are.
    static func make(
        frames: Int = 30, width: Int = 64, height: Int = 48, firstNs: UInt64 = 9_000_000_000, name: String = "damaged"
    ) throws -> String {
        let path = NSTemporaryDirectory() + "/\(name)-\(UUID().uuidString)"
        let session = SyncSession(hostId: "rig_01", outputDir: path)
        let syncPoint = try session.start()
        let format = VideoFormat(width: width, height: height, pixelFormat: .grey)
        let sink = VideoSessionSink(session: session)
        let descriptor = StreamDescriptor(
            id: "cam", kind: .video, nominalRate: 30, device: "synthetic", videoFormat: format)
        try sink.open(streams: [descriptor])
        for index in 0..<frames {
            var record = CaptureRecord()
            record.sequence = UInt64(index)
            record.captureNs = firstNs + UInt64(index) * 33_333_333
            let frame = [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: width * height)
            record.bytesUsed = UInt32(frame.count)
            _ = try frame.withUnsafeBytes { try sink.write(record, frame: $0, stream: 0, frameNumber: index) }
        }
        _ = try sink.close()
        try Sidecar.store(
            [
                "state": "recording", "host_id": "rig_01",
                "streams": [
                    [
                        "id": "cam", "nominal_rate": 30.0, "linked_path": .string("\(path)/cam.mkv"),
                        "format": [
                            "width": JSONValue(width), "height": JSONValue(height),
                            "pixel_format": .string(format.pixelFormat.rawValue),
                        ],
                    ]
                ],
                "sync_point": [
                    "monotonic_ns": JSONValue(syncPoint.monotonicNs), "wall_clock_ns": JSONValue(syncPoint.wallClockNs),
                ],
            ], layout: SessionLayout(directory: path))
        for name in ["manifest.json", "sync_point.json"] {
            try? FileManager.default.removeItem(atPath: "\(path)/\(name)")
        }
        return path
    }
}
