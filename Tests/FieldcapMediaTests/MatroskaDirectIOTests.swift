import CMatroska
import FieldcapCore
import Foundation
import TestSupport
import Testing

@testable import FieldcapMedia

/// Frame buffers as a camera's: page-aligned, one per frame, each filled with its own bytes.
private final class AlignedFrames {
    let buffers: [UnsafeMutableRawBufferPointer]

    init(count: Int, bytes: Int) {
        buffers = (0..<count).map { index in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes, alignment: 4096)
            for offset in 0..<bytes { buffer[offset] = UInt8(truncatingIfNeeded: offset / 7 &+ index &* 31) }
            // A marker that says which frame this is, to find the frame's bytes in the file.
            withUnsafeBytes(of: (UInt64(0xF1E1_DCA9_0000_0000) | UInt64(index)).bigEndian) { marker in
                buffer.baseAddress!.copyMemory(from: marker.baseAddress!, byteCount: 8)
            }
            return buffer
        }
    }

    deinit { for buffer in buffers { buffer.deallocate() } }

    func marker(_ index: Int) -> Data { Data(buffers[index].prefix(8)) }
}

/// Whether the temporary directory's filesystem does direct I/O (ext4 and XFS do; tmpfs does not).
private let temporaryDirectoryDoesDirectIO: Bool = {
    let path = NSTemporaryDirectory() + "/mkv-probe-\(UUID().uuidString).mkv"
    defer { try? FileManager.default.removeItem(atPath: path) }
    guard
        let writer = try? MatroskaWriter(
            path: path, format: VideoFormat(width: 640, height: 480, pixelFormat: .yuyv), nominalRate: 30)
    else { return false }
    return writer.writesDirect
}()

private func frames(in path: String) -> [Data] {
    var read: [Data] = []
    var error = CMatroska_error()
    _ = withUnsafeMutablePointer(to: &read) { read in
        CMatroska_read_frames(
            path,
            { context, bytes, count, _, _ in
                context!.assumingMemoryBound(to: [Data].self).pointee.append(Data(bytes: bytes!, count: count))
                return 0
            }, read, &error)
    }
    return read
}

@Suite(
    "Matroska writer, direct I/O",
    .enabled(if: temporaryDirectoryDoesDirectIO, "the temporary directory's filesystem has no direct I/O (tmpfs?)"))
struct MatroskaDirectIOTests {
    @Test("page-aligned frames go to the disk directly, each on an aligned offset, and read back exactly")
    func alignedFrames() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 640, height: 480, pixelFormat: .yuyv)
        let bytes = format.pixelFormat.frameBytes(width: 640, height: 480)!
        let source = AlignedFrames(count: 12, bytes: bytes)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30)
        #expect(writer.writesDirect)
        for (index, buffer) in source.buffers.enumerated() {
            try writer.writeFrame(UnsafeRawBufferPointer(buffer), captureNs: 1_000_000_000 + UInt64(index) * 33_333_333)
        }
        #expect(writer.writesDirect, "a direct write was refused")
        try writer.finish()

        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        for index in source.buffers.indices {
            let offset = try #require(
                file.range(of: source.marker(index))?.lowerBound, "frame \(index) is not in the file")
            #expect(offset % 4096 == 0, "frame \(index) starts at \(offset)")
        }
        #expect(frames(in: path) == source.buffers.map { Data($0) })
        let probe = try runTool(
            "ffprobe",
            [
                "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                "stream=codec_name,nb_read_frames",
                "-of", "default=noprint_wrappers=1", path,
            ])
        #expect(
            probe.output.contains("codec_name=rawvideo") && probe.output.contains("nb_read_frames=12"),
            "ffprobe: \(probe.output)")
        let decode = try runTool(
            "ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "yuyv422", "-y", path + ".raw"])
        defer { try? FileManager.default.removeItem(atPath: path + ".raw") }
        #expect(decode.status == 0, "\(decode.output)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: path + ".raw"))
                == source.buffers.reduce(into: Data()) { $0.append(Data($1)) })
    }

    @Test("a frame that is not whole alignment units, or not in an aligned buffer, still reads back exactly")
    func tailsAndUnalignedBuffers() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // 331 x 251 grey: 83,081 bytes, a tail of 1,161 bytes past 20 pages.
        let format = VideoFormat(width: 331, height: 251, pixelFormat: .grey)
        let bytes = format.pixelFormat.frameBytes(width: 331, height: 251)!
        let source = AlignedFrames(count: 10, bytes: bytes + 1)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30)
        var written: [Data] = []
        for (index, buffer) in source.buffers.enumerated() {
            // Odd frames from one byte into their buffer: not aligned, so through the page cache.
            let frame = UnsafeRawBufferPointer(rebasing: buffer[(index % 2)..<(index % 2 + bytes)])
            written.append(Data(frame))
            try writer.writeFrame(frame, captureNs: UInt64(index) * 33_333_333)
        }
        #expect(writer.writesDirect)
        try writer.finish()
        #expect(frames(in: path) == written)
        let decode = try runTool(
            "ffmpeg", ["-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "gray", "-y", path + ".raw"])
        defer { try? FileManager.default.removeItem(atPath: path + ".raw") }
        #expect(decode.status == 0, "\(decode.output)")
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: path + ".raw")) == written.reduce(into: Data()) { $0.append($1) })
    }

    @Test("Voids of every length alignment needs, short and long size fields: every frame reads back at its size")
    func voidLengths() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // 20 pages and a tail that moves the next frame's start round the page: the Void before
        // each frame is 2 bytes to a page and 1 byte long. The writer does not look inside MJPEG.
        let sizes = (0..<96).map { 20 * 4096 + ($0 * 43) % 4096 }
        let source = AlignedFrames(count: sizes.count, bytes: sizes.max()!)
        let writer = try MatroskaWriter(
            path: path, format: VideoFormat(width: 64, height: 48, pixelFormat: .mjpeg), nominalRate: 30)
        var written: [Data] = []
        for (index, size) in sizes.enumerated() {
            let frame = UnsafeRawBufferPointer(rebasing: source.buffers[index][0..<size])
            written.append(Data(frame))
            try writer.writeFrame(frame, captureNs: UInt64(index) * 33_333_333)
        }
        #expect(writer.writesDirect)
        try writer.finish()
        #expect(frames(in: path) == written)
        let voids = try EBMLLayout(path: path).voidLengths
        #expect(voids.contains { $0 <= 128 } && voids.contains { $0 > 128 }, "Void lengths \(voids)")
        let packets = try runTool(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=size", "-of", "csv=p=0", path])
        // (Its complaints about the frames, which are not JPEG, are not numbers.)
        #expect(
            packets.output.split(separator: "\n").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } == sizes,
            "ffprobe: \(packets.output.prefix(300))")
    }

    @Test("a file cut short in a directly written frame is salvaged to the frame before it")
    func salvageCutShort() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 640, height: 480, pixelFormat: .yuyv)
        let source = AlignedFrames(count: 5, bytes: format.pixelFormat.frameBytes(width: 640, height: 480)!)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30)
        for (index, buffer) in source.buffers.enumerated() {
            try writer.writeFrame(UnsafeRawBufferPointer(buffer), captureNs: UInt64(index) * 33_333_333)
        }
        // As a kill would leave it: never finished, and the last frame cut in half.
        let cut = path + ".cut"
        defer { try? FileManager.default.removeItem(atPath: cut) }
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        let lastFrame = try #require(file.range(of: source.marker(4))?.lowerBound)
        try file.prefix(lastFrame + 300_000).write(to: URL(fileURLWithPath: cut))
        #expect(try MatroskaSalvage.salvage(path: cut, format: format, nominalRate: 30) == 4)
        #expect(frames(in: cut) == source.buffers.prefix(4).map { Data($0) })
    }

    @Test("directIO: false writes through the page cache")
    func optedOut() throws {
        let path = NSTemporaryDirectory() + "/mkv-\(UUID().uuidString).mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let format = VideoFormat(width: 640, height: 480, pixelFormat: .yuyv)
        let source = AlignedFrames(count: 3, bytes: format.pixelFormat.frameBytes(width: 640, height: 480)!)
        let writer = try MatroskaWriter(path: path, format: format, nominalRate: 30, directIO: false)
        for (index, buffer) in source.buffers.enumerated() {
            try writer.writeFrame(UnsafeRawBufferPointer(buffer), captureNs: UInt64(index) * 33_333_333)
        }
        #expect(!writer.writesDirect)
        try writer.finish()
        #expect(frames(in: path) == source.buffers.map { Data($0) })
        // No Void padding: the first frame follows its headers directly.
        let first = try #require(
            try Data(contentsOf: URL(fileURLWithPath: path)).range(of: source.marker(0))?.lowerBound)
        #expect(first % 4096 != 0)
    }
}
