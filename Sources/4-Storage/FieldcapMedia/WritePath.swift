import CMatroska
import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// How a session's files go to the disk, decided per file system.
///
/// A video is written through two descriptors where direct I/O pays: frames straight to the
/// disk, the headers, each frame's tail and the frame log through the page cache. That is only
/// correct where the file system keeps direct and cached writes to one file coherent, which the
/// local block file systems do (a direct write flushes and drops the cached pages it overlaps).
/// Network and stacked file systems do not promise it: on 9p, NFS and CIFS in their caching
/// modes, FUSE and overlay, a cached page holding stale bytes can be written back over data
/// written directly (#43). There, and on any file system not known here, every write goes
/// through the page cache.
///
/// The file system is named by the mount table (`/proc/self/mountinfo`, by the directory's
/// device), not by `statfs` alone: 9p2000.L's statfs answers with the host's file system type,
/// so a 9p share of an ext4 disk says "ext4" there.
public struct WritePath: Equatable, Sendable {
    /// The mount table's name of the file system (`ext4`, `9p`, `nfs4`, `fuse.bindfs`...), when known.
    public var mountType: String?
    /// `statfs`'s `f_type` (the corresponding C constants are in `linux/magic.h`); 0 when unknown.
    public var fileSystemType: UInt64
    /// The mount table's options of the file system itself (its super options: `hard`, `soft`...).
    public var mountOptions: [String] = []

    /// The file system holding `path` (a file or a directory; for a file, its directory's), or
    /// nil when it cannot be looked at.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        // A stacked file system (overlay) gives a file its real file system's device, and its
        // directories its own: the directory says where the file is written through.
        let directory = (info.st_mode & S_IFMT) == S_IFDIR ? path : PathName.directory(of: path)
        if directory != path, stat(directory.isEmpty ? "." : directory, &info) != 0 { return nil }
        var type: UInt64 = 0
        if CMatroska_filesystem_type(directory.isEmpty ? "." : directory, &type) != 0 { type = 0 }
        let mount = Self.mount(device: UInt64(info.st_dev))
        self.init(mountType: mount?.type, fileSystemType: type, mountOptions: mount?.options ?? [])
    }

    public init(mountType: String?, fileSystemType: UInt64 = 0, mountOptions: [String] = []) {
        self.mountType = mountType
        self.fileSystemType = fileSystemType
        self.mountOptions = mountOptions
    }

    /// A network share mounted `hard`: when its server goes away, the kernel retries each of its
    /// writes for ever, and no program writing there can end (#43). NFS mounts hard unless told
    /// `soft`; CIFS mounts soft unless told `hard`.
    public var waitsForeverWhenGone: Bool {
        guard let mountType else { return false }
        if mountType == "nfs" || mountType == "nfs4" {
            return !mountOptions.contains("soft") && !mountOptions.contains("softerr")
        }
        if mountType == "cifs" || mountType == "smb3" { return mountOptions.contains("hard") }
        return false
    }

    /// What a user recording to a hard-mounted share should know at start; nil elsewhere.
    public var hardMountWarning: String? {
        guard waitsForeverWhenGone else { return nil }
        return
            "\(fileSystemName) is mounted hard: if its server goes away, the kernel holds every "
            + "program writing there until it comes back, fieldcap and its Ctrl-C included; mount it "
            + "soft (NFS: -o soft,timeo=100,retrans=2) so a lost share ends the recording with an error"
    }

    /// The file system's name, for the start line.
    public var fileSystemName: String {
        mountType ?? Self.names[fileSystemType]
            ?? "an unknown file system (type 0x\(String(fileSystemType, radix: 16)))"
    }

    /// Direct I/O mixed with cached writes on one file is coherent: the local block file systems.
    public var directIOIsCoherent: Bool {
        if let mountType { return Self.coherentMounts.contains(mountType) }
        return Self.coherentTypes.contains(fileSystemType)
    }

    /// The largest file the file system holds, where that limit is near enough to matter: FAT's
    /// 4 GiB less a byte (an SD card or USB stick as it comes); nil elsewhere.
    public var largestFileBytes: UInt64? {
        let fat = mountType.map { ["vfat", "msdos", "fat"].contains($0) } ?? (fileSystemType == 0x4D44)
        return fat ? (1 << 32) - 1 : nil
    }

    /// One line for the start of a recording: which path the videos take, and why.
    public func description(directIO requested: Bool) -> String {
        if !requested {
            return "videos and logs on \(fileSystemName) go through the page cache (--no-direct-io)"
        }
        if directIOIsCoherent {
            return
                "videos on \(fileSystemName): large frames with direct I/O where "
                + "it reports how (statx), headers and logs through the page cache"
        }
        return
            "videos and logs on \(fileSystemName) go through the page cache: direct I/O is used only "
            + "on ext4, XFS, btrfs and f2fs, where it stays coherent with cached writes to the same file"
    }

    static let coherentMounts: Set<String> = ["ext4", "ext3", "ext2", "xfs", "btrfs", "f2fs"]
    // From linux/magic.h: ext2/3/4, XFS, btrfs, f2fs.
    static let coherentTypes: Set<UInt64> = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010]

    static let names: [UInt64: String] = [
        0xEF53: "ext4", 0x5846_5342: "xfs", 0x9123_683E: "btrfs", 0xF2F5_2010: "f2fs", 0x0102_1997: "9p",
        0x0102_1994: "tmpfs", 0x6969: "nfs", 0xFF53_4D42: "cifs", 0xFE53_4D42: "smb3", 0x6573_5546: "fuse",
        0x794C_7630: "overlay", 0x4D44: "vfat", 0x2011_BAB0: "exfat",
    ]

    /// The mount table's file system type and super options of the mount whose device is `device`.
    static func mount(device: UInt64) -> (type: String, options: [String])? {
        // glibc's major() and minor(), which Swift cannot call.
        let major = ((device >> 8) & 0xFFF) | ((device >> 32) & ~UInt64(0xFFF))
        let minor = (device & 0xFF) | ((device >> 12) & ~UInt64(0xFF))
        return mount(device: "\(major):\(minor)", in: readMountInfo())
    }

    /// The mount table's file system type of the mount whose device is `device`.
    static func mountType(device: String, in mountInfo: String) -> String? {
        mount(device: device, in: mountInfo)?.type
    }

    /// From `/proc/self/mountinfo`'s lines:
    /// `ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [TAGS] - TYPE SOURCE SUPER-OPTIONS`.
    static func mount(device: String, in mountInfo: String) -> (type: String, options: [String])? {
        var found: (type: String, options: [String])?
        for line in mountInfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 3, fields[2] == device, let dash = fields.firstIndex(of: "-"),
                dash + 1 < fields.count
            else { continue }
            // The last mount of a device is the one on top.
            let options = dash + 3 < fields.count ? fields[dash + 3].split(separator: ",").map(String.init) : []
            found = (String(fields[dash + 1]), options)
        }
        return found
    }

    private static func readMountInfo() -> String {
        let fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = SystemCall.retryingInterrupts {
                chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            }
            if got <= 0 { break }
            bytes += chunk[0..<got]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
