import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapMedia

@Suite("Matroska scan and cut")
struct MatroskaScanTests {
    static let format = VideoFormat(width: 64, height: 48, pixelFormat: .yuyv)
    static var frameBytes: Int { format.pixelFormat.frameBytes(width: 64, height: 48)! }

    /// A file of `count` frames 33.3 ms apart (frame i filled with i), finished or not.
    private func makeVideo(_ count: Int, finished: Bool = true) throws -> String {
        let path = NSTemporaryDirectory() + "/scan-\(UUID().uuidString).mkv"
        let writer = try MatroskaWriter(path: path, format: Self.format, nominalRate: 30)
        for index in 0..<count {
            let frame = [UInt8](repeating: UInt8(index), count: Self.frameBytes)
            try frame.withUnsafeBytes {
                try writer.writeFrame($0, captureNs: 7_000_000_000 + UInt64(index) * 33_333_333)
            }
        }
        if finished { try writer.finish() } else { try writer.sync() }
        return path
    }

    private func probeFrames(_ path: String) throws -> String {
        let probe = try runTool(
            "ffprobe",
            ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path])
        return probe.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a scan counts the frames and gives their times without reading them, finished or not")
    func scanCounts() throws {
        for finished in [true, false] {
            let path = try makeVideo(25, finished: finished)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let scan = try MatroskaScan(path: path)
            #expect(scan.isMatroska && scan.hasVideoTrack)
            #expect(scan.frames.count == 25)
            #expect(scan.frames.allSatisfy { $0.size == UInt64(Self.frameBytes) })
            // The writer's 1 ms ticks from the first frame: 0, 33, 67, 100, ...
            #expect(
                scan.frames.map(\.timeNs) == (0..<25).map { UInt64((Double($0) * 33.333333).rounded()) * 1_000_000 })
        }
    }

    @Test("a file cut in the middle of a frame counts only the whole frames before it")
    func cutShort() throws {
        let path = try makeVideo(10, finished: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clusters = try EBMLLayout(path: path).clusters
        #expect(truncate(path, off_t(clusters[6].lowerBound + 40)) == 0)
        #expect(try MatroskaScan(path: path).frames.count == 6)
        #expect(MatroskaSalvage.countFrames(path: path, format: Self.format) == 6)
    }

    @Test(
        """
        zeros where a Cluster was (a page a power cut lost) end \
        the frames there: none after it is numbered in its place
        """
    )
    func gapEndsTheFrames() throws {
        let path = try makeVideo(10, finished: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let cluster = try EBMLLayout(path: path).clusters[5]
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(cluster.lowerBound))
        try handle.write(contentsOf: Data(count: cluster.count))
        try handle.close()
        // libebml alone looks past the zeros and finds frame 6's Cluster, which would become frame 5.
        #expect(try MatroskaScan(path: path).frames.count == 5)
        #expect(MatroskaSalvage.countFrames(path: path, format: Self.format) == 5)
        #expect(try MatroskaSalvage.salvage(path: path, format: Self.format, nominalRate: 30) == 5)
        #expect(try probeFrames(path) == "5")
    }

    @Test("what is not Matroska says so; a file that cannot be opened is an error naming it")
    func notMatroska() throws {
        let path = NSTemporaryDirectory() + "/scan-\(UUID().uuidString).mp4"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // An MP4's first box, then text.
        FileManager.default.createFile(
            atPath: path, contents: Data([0, 0, 0, 0x18] + Array("ftypisom and then some text".utf8)))
        let scan = try MatroskaScan(path: path)
        #expect(!scan.isMatroska && scan.frames.isEmpty)
        do {
            _ = try MatroskaScan(path: path + ".missing")
            Issue.record("scanned a file that does not exist")
        } catch {
            #expect(error.path == path + ".missing")
            #expect(error.description.contains("No such file or directory"))
        }
    }

    @Test("salvage keeps at most the frames asked for")
    func salvageLimit() throws {
        let path = try makeVideo(20, finished: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try MatroskaSalvage.salvage(path: path, format: Self.format, nominalRate: 30, limit: 12) == 12)
        #expect(try probeFrames(path) == "12")
        #expect(try MatroskaScan(path: path).frames.count == 12)
    }

    @Test(
        """
        finished in place: the first frames of a finished or an \
        unfinished file, with the Segment size and duration finish writes
        """
    )
    func finishInPlace() throws {
        for finished in [true, false] {
            let path = try makeVideo(20, finished: finished)
            defer { try? FileManager.default.removeItem(atPath: path) }
            #expect(try MatroskaSalvage.finishInPlace(path: path, keeping: 12, nominalRate: 30))
            #expect(try MatroskaScan(path: path).frames.count == 12)
            let probe = try runTool(
                "ffprobe",
                [
                    "-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames:format=duration", "-of",
                    "default=noprint_wrappers=1", path,
                ])
            #expect(probe.status == 0 && probe.output.contains("nb_read_frames=12"), "\(probe.output)")
            // Frame 11 at 367 ms plus its share of 33 ms: 0.4 s (20 frames were 0.667 s; an
            // unfinished file had no duration).
            let duration = probe.output.split(separator: "\n").first { $0.hasPrefix("duration=") }.flatMap {
                Double($0.dropFirst(9))
            }
            #expect(duration.map { abs($0 - 0.400) < 0.002 } == true, "\(probe.output)")
            // The same bytes as a file written with those 12 frames and finished, but for the
            // random TrackUID (always 8 bytes, so the sizes agree).
            let ours = try Data(contentsOf: URL(fileURLWithPath: path))
            let reference = try makeVideo(12)
            defer { try? FileManager.default.removeItem(atPath: reference) }
            let theirs = try Data(contentsOf: URL(fileURLWithPath: reference))
            #expect(EBMLLayout.trackUIDLength(ours) == 8 && EBMLLayout.trackUIDLength(theirs) == 8)
            #expect(ours.count == theirs.count)
            #expect(EBMLLayout.withoutTrackUID(ours) == EBMLLayout.withoutTrackUID(theirs))
            // Finishing it again with as many frames changes nothing; more than it has is refused.
            #expect(try MatroskaSalvage.finishInPlace(path: path, keeping: 12, nominalRate: 30))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == ours)
            #expect(try !MatroskaSalvage.finishInPlace(path: path, keeping: 30, nominalRate: 30))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == ours)
        }
    }

    @Test("a damaged header (a timestamp unit of 0) is not finished in place, and does not crash the walk")
    func zeroScale() throws {
        let path = try makeVideo(5, finished: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // TimecodeScale (ID 2A D7 B1), 1,000,000 in 3 bytes.
        let scale: [UInt8] = [0x2A, 0xD7, 0xB1, 0x83, 0x0F, 0x42, 0x40]
        let at = try #require(
            (0...(bytes.count - scale.count)).first { Array(bytes[$0..<($0 + scale.count)]) == scale })
        bytes.replaceSubrange((at + 4)..<(at + 7), with: [0, 0, 0])
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try MatroskaScan(path: path).frames.count == 5)
        #expect(try !MatroskaSalvage.finishInPlace(path: path, keeping: 3, nominalRate: 30))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(bytes))
    }

    @Test("another writer's file (FFmpeg's remux, with its index) is not finished in place")
    func otherLayout() throws {
        let path = try makeVideo(10)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let remuxed = path + ".remux.mkv"
        defer { try? FileManager.default.removeItem(atPath: remuxed) }
        #expect(try runTool("ffmpeg", ["-v", "error", "-i", path, "-c", "copy", "-y", remuxed]).status == 0)
        #expect(try MatroskaScan(path: remuxed).frames.count == 10)
        let before = try Data(contentsOf: URL(fileURLWithPath: remuxed))
        #expect(try !MatroskaSalvage.finishInPlace(path: remuxed, keeping: 5, nominalRate: 30))
        #expect(try Data(contentsOf: URL(fileURLWithPath: remuxed)) == before)
    }
}
