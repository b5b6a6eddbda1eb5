import FieldcapCore
import Foundation
import Testing

@testable import FieldcapMedia

/// What a file system that loses written data (9p in the kernel rig's guest, #43) looks like to
/// the writers: bytes they wrote read back as zeros. Zeros are put in place through a
/// descriptor of the test's own, as a stale cached page written back over the data would.
@Suite("Written data is read back (#43)")
struct WrittenDataCheckTests {
    static let format = VideoFormat(width: 64, height: 48, pixelFormat: .grey)

    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "/\(name)-\(UUID().uuidString)"
    }

    /// Overwrites `count` bytes at `offset` of `path` with zeros.
    static func zero(_ path: String, at offset: Int, count: Int) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(count: count))
        try handle.synchronize()
    }

    static func writeFrames(_ writer: MatroskaWriter, _ count: Int, from first: Int = 0) throws {
        for index in first..<(first + count) {
            let frame = [UInt8](repeating: UInt8(1 + index % 200), count: 64 * 48)
            try frame.withUnsafeBytes { try writer.writeFrame($0, captureNs: UInt64(index) * 100_000_000) }
        }
    }

    @Test("sync() reads the last frame back and passes when the file holds it")
    func syncPassesOnAGoodFile() throws {
        let path = Self.temporaryPath("mkv-good") + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MatroskaWriter(path: path, format: Self.format, nominalRate: 10)
        try Self.writeFrames(writer, 5)
        try writer.sync()
        try Self.writeFrames(writer, 5, from: 5)
        try writer.sync()
        try writer.finish()
        #expect(MatroskaSalvage.countFrames(path: path, format: Self.format) == 10)
    }

    @Test("sync() fails, naming the file, when the last frame's bytes read back as zeros")
    func syncFailsOnZeroedFrame() throws {
        let path = Self.temporaryPath("mkv-zeroed") + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MatroskaWriter(path: path, format: Self.format, nominalRate: 10)
        try Self.writeFrames(writer, 5)
        let size = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0)
        // The last frame's block header and pixels: a run of zeros where the frame was.
        try Self.zero(path, at: size - 64 * 48 - 4, count: 64 * 48 + 4)
        let error = #expect(throws: MediaError.self) { try writer.sync() }
        #expect(error?.path == path)
        #expect(error?.message.contains("lost written data") == true)
    }

    @Test("sync() fails when only the end of the last frame was lost")
    func syncFailsOnZeroedTail() throws {
        let path = Self.temporaryPath("mkv-tail") + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MatroskaWriter(path: path, format: Self.format, nominalRate: 10)
        try Self.writeFrames(writer, 3)
        let size = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0)
        try Self.zero(path, at: size - 100, count: 100)
        #expect(throws: MediaError.self) { try writer.sync() }
    }

    @Test("finish() counts the frames the file holds: a frame lost in the middle is an error, not a complete file")
    func finishCountsFrames() throws {
        let path = Self.temporaryPath("mkv-middle") + ".mkv"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try MatroskaWriter(path: path, format: Self.format, nominalRate: 10)
        try Self.writeFrames(writer, 4)
        let middle = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0)
        try Self.writeFrames(writer, 4, from: 4)
        try writer.sync()
        // The fifth frame's Cluster header, zeroed after the last sync read the eighth back.
        try Self.zero(path, at: middle, count: 16)
        let error = #expect(throws: MediaError.self) { try writer.finish() }
        #expect(error?.message.contains("holds 4 of the 8 frames written") == true)
    }

    @Test("the frame log's sync reads its last line back and fails when it reads back as zeros")
    func frameLogReadsBack() throws {
        let path = Self.temporaryPath("frames") + ".frames.ndjson"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try FrameLog(path: path)
        var record = CaptureRecord()
        for index in 0..<3 {
            record.sequence = UInt64(index)
            record.captureNs = 1_000 + UInt64(index)
            try log.append(record, frameNumber: index)
        }
        try log.sync()
        record.sequence = 3
        try log.append(record, frameNumber: 3)
        let size = Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0)
        try Self.zero(path, at: size - 20, count: 10)
        let error = #expect(throws: FrameLogLost.self) { try log.sync() }
        #expect(error?.description.contains(path) == true)
    }

    @Test(
        """
        direct I/O only on file systems that keep it coherent \
        with cached writes: never on 9p, NFS, CIFS, FUSE, overlay
        """
    )
    func writePathByFileSystem() {
        for local in ["ext4", "xfs", "btrfs", "f2fs"] { #expect(WritePath(mountType: local).directIOIsCoherent) }
        for other in [
            "9p", "nfs", "nfs4", "cifs", "smb3", "fuse.bindfs", "fuseblk", "overlay", "tmpfs", "vfat", "exfat",
        ] {
            let path = WritePath(mountType: other, fileSystemType: 0xEF53)
            // 9p2000.L's statfs gives the host's type: the mount table's name decides.
            #expect(!path.directIOIsCoherent, "\(other)")
            #expect(path.description(directIO: true).contains("\(other) go through the page cache"))
        }
        // Without a mount table entry, statfs's type.
        #expect(WritePath(mountType: nil, fileSystemType: 0x5846_5342).directIOIsCoherent)
        #expect(!WritePath(mountType: nil, fileSystemType: 0x0102_1997).directIOIsCoherent)
        #expect(!WritePath(mountType: nil, fileSystemType: 0x1234_5678).directIOIsCoherent)
        #expect(WritePath(path: "/nonexistent/\(UUID().uuidString)") == nil)
    }

    @Test(
        """
        FAT's 4 GiB file limit is known by the mount's name or \
        statfs's type; other file systems have none that matters
        """
    )
    func largestFile() {
        for fat in ["vfat", "msdos"] { #expect(WritePath(mountType: fat).largestFileBytes == (1 << 32) - 1) }
        #expect(WritePath(mountType: nil, fileSystemType: 0x4D44).largestFileBytes == (1 << 32) - 1)
        for other in ["ext4", "exfat", "xfs", "9p", "fuse.bindfs"] {
            #expect(WritePath(mountType: other).largestFileBytes == nil)
        }
    }

    @Test("the mount table names the file system of a device; the last mount on top wins")
    func mountTable() {
        let table = """
            22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/lower
            36 22 254:0 / /mnt/rig-disk rw,relatime shared:1 - ext4 /dev/vda rw
            37 22 0:40 / /tmp/p43 rw,relatime - 9p rigshare0 rw,access=client,msize=262144,trans=virtio
            38 37 0:40 / /tmp/p43 rw,relatime master:2 - fuse.bindfs bindfs rw
            """
        #expect(WritePath.mountType(device: "254:0", in: table) == "ext4")
        #expect(WritePath.mountType(device: "0:40", in: table) == "fuse.bindfs")
        #expect(WritePath.mountType(device: "0:21", in: table) == "overlay")
        #expect(WritePath.mountType(device: "8:1", in: table) == nil)
        // Shares: the super options say how a lost server is met.
        let shares = """
            40 22 0:50 / /mnt/nfs rw,relatime shared:3 - nfs4 127.0.0.1:/ \
            rw,vers=4.2,rsize=262144,hard,proto=tcp,timeo=600,retrans=2
            41 22 0:51 / /mnt/soft rw,relatime shared:4 - nfs4 127.0.0.1:/ rw,vers=4.2,soft,proto=tcp,timeo=10,retrans=1
            42 22 0:52 / /mnt/cifs rw,relatime shared:5 - cifs //127.0.0.1/rig rw,vers=3.1.1,cache=strict,soft,nounix
            43 22 0:53 / /mnt/cifs-hard rw,relatime - cifs //127.0.0.1/rig rw,vers=3.1.1,hard,nounix
            """
        let gone = { (device: String) -> WritePath? in
            WritePath.mount(device: device, in: shares).map { WritePath(mountType: $0.type, mountOptions: $0.options) }
        }
        #expect(gone("0:50")?.waitsForeverWhenGone == true)
        #expect(gone("0:50")?.hardMountWarning?.hasPrefix("nfs4 is mounted hard: ") == true)
        #expect(gone("0:51")?.waitsForeverWhenGone == false)
        #expect(gone("0:52")?.waitsForeverWhenGone == false)
        #expect(gone("0:53")?.waitsForeverWhenGone == true)
        #expect(gone("0:51")?.hardMountWarning == nil)
        #expect(WritePath(mountType: "ext4", mountOptions: ["rw"]).hardMountWarning == nil)
        // Where the tests run, the answer is the mount table's.
        #expect(WritePath(path: NSTemporaryDirectory())?.mountType != nil)
    }
}
