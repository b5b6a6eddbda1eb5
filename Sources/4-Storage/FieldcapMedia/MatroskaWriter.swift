import CMatroska
import FieldcapCore
import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// Writes one camera stream into a Matroska file with libmatroska: raw frames losslessly
/// (`V_UNCOMPRESSED` with the pixel format's FourCC), MJPEG passed through or encoded
/// (`V_MJPEG`), FFV1 with its configuration record as the track's CodecPrivate (`V_FFV1`),
/// a hardware encoder's H.264 or HEVC (`V_MPEG4/ISO/AVC`, `V_MPEGH/ISO/HEVC`, avcC or hvcC as
/// CodecPrivate) and vicodec's FWHT (`V_MS/VFW/FOURCC`). Each
/// frame's presentation time is its capture time relative to the stream's first frame, in
/// Matroska's 1 ms ticks, so the file keeps the real, variable timing.
///
/// Frames are not copied: each is written from the caller's buffer (a camera's mmap'd buffer)
/// with its Cluster and SimpleBlock headers in one `writev`, so when `writeFrame` returns the
/// frame is in the kernel's hands, and `sync` only has to `fdatasync`. Where the filesystem says
/// how to do direct I/O (statx, from Linux 6.1: ext4, XFS, f2fs; not tmpfs), a large frame in a
/// page-aligned buffer goes from it to the disk without the page cache (`writesDirect`): that
/// saves the copy, the zeroed page cache pages and the writeback, most of a recorder's CPU for
/// raw video. The file is readable at every frame boundary (the Segment's size stays "unknown"
/// until `finish`); it is written live: no index (Cues), which would grow with every frame until
/// the end.
///
/// Thread-bound (writer).
public final class MatroskaWriter {
    public let path: String
    public let format: VideoFormat
    private var file: OpaquePointer?
    private var fd: Int32 = -1
    /// The same file opened with O_DIRECT, or -1.
    private var directFd: Int32 = -1
    /// The same file opened for reading: what was written is read back from it (`verify`).
    private var readFd: Int32 = -1
    /// Where the last frame written starts, and its first and last bytes as written: `verify`
    /// reads them back with its SimpleBlock header.
    private var lastFrameStart: UInt64 = 0
    private var lastFrameEnd: UInt64 = 0
    private var lastFrameKeyframe = true
    private var lastFrameHead = [UInt8](repeating: 0, count: MatroskaWriter.probeBytes)
    private var lastFrameTail = [UInt8](repeating: 0, count: MatroskaWriter.probeBytes)
    private var lastFrameProbed = 0
    /// Reused for what `verify` reads back.
    private var readBack = [UInt8](repeating: 0, count: MatroskaWriter.blockHeaderBytes + MatroskaWriter.probeBytes)
    /// The nominal frame period, in ticks, for the file's duration (the last frame's share).
    private let framePeriodTicks: Double
    private var firstNs: UInt64?
    private var lastTick: UInt64?
    private var finished = false
    /// Frames written so far.
    public private(set) var frameCount = 0
    /// Time each frame's write and each sync, for a report of a stalled disk.
    private let writeTimer: DiskWatch.Timer?
    private let syncTimer: DiskWatch.Timer?

    /// The files' WritingApp, by which `MatroskaSalvage.finishInPlace` knows their layout.
    static let writingApp = "fieldcap"

    /// The file's timestamp unit (CMatroska.h).
    static let nanosecondsPerTick = UInt64(CMATROSKA_NANOSECONDS_PER_TICK)

    /// Whether frames go to the disk with direct I/O (see the type's documentation).
    public var writesDirect: Bool { file.map { CMatroska_writes_direct($0) } ?? false }

    /// Creates (or replaces) `path` and writes the Matroska header and the video track.
    /// `directIO: false` writes every frame through the page cache; `watch` times the frames'
    /// writes and the syncs.
    public init(
        path: String, format: VideoFormat, nominalRate: Double, codecPrivate: [UInt8] = [], directIO: Bool = true,
        watch: DiskWatch? = nil
    ) throws(MediaError) {
        self.path = path
        self.format = format
        writeTimer = watch?.timer(path: path, operation: .write)
        syncTimer = watch?.timer(path: path, operation: .sync)
        let period = nominalRate > 0 ? 1e9 / nominalRate : 0
        framePeriodTicks = Self.framePeriodTicks(nominalRate: nominalRate)
        // O_NOFOLLOW: a link planted in the session directory must not send the video elsewhere.
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw .system(errno, "open", path: path) }
        // Direct I/O only where it stays coherent with the page cache's writes to the same file.
        if directIO, WritePath(path: path)?.directIOIsCoherent == true { directFd = CMatroska_open_direct(path, fd) }
        readFd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard readFd >= 0 else { throw .system(errno, "open for reading back", path: path) }
        let codec =
            switch format.pixelFormat {
            case .mjpeg: "V_MJPEG"
            case .ffv1: "V_FFV1"
            case .h264: "V_MPEG4/ISO/AVC"
            case .hevc: "V_MPEGH/ISO/HEVC"
            // No Matroska codec ID of its own: the fourcc in a BITMAPINFOHEADER (CodecPrivate).
            case .fwht: "V_MS/VFW/FOURCC"
            default: "V_UNCOMPRESSED"
            }
        var error = CMatroska_error()
        file = codec.withCString { codecID in
            Self.withColourSpace(of: format.pixelFormat) { colourSpace in
                codecPrivate.withUnsafeBufferPointer { setup in
                    var track = CMatroska_video_track(
                        codec_id: codecID, colour_space: colourSpace, width: UInt32(format.width),
                        height: UInt32(format.height), default_duration_ns: UInt64(period.rounded()),
                        codec_private: setup.baseAddress, codec_private_size: setup.count)
                    return CMatroska_create(fd, directFd, &track, Self.writingApp, &error)
                }
            }
        }
        guard file != nil else { throw Self.failure(error, path: path) }
        // Where frames go straight to the device (direct I/O) while the header sits in the page
        // cache, the header is made durable before the first frame: a power cut in the first
        // sync interval would otherwise leave frames behind a zeroed header, a file no reader
        // (nor `recover`) can open. Mostly off the hot path: segments are opened ahead of time
        // (an encoder whose CodecPrivate comes with its first frame opens its file then, on its
        // worker); files written through the page cache alone (extracts, salvage) need none.
        if writesDirect {
            guard fdatasync(fd) == 0 else { throw .system(errno, "fdatasync the header", path: path) }
        }
    }

    /// Bytes of a frame's start and end kept to be read back.
    static let probeBytes = 16
    /// A SimpleBlock's header before its frame: the track number (1, one byte), the time from
    /// the Cluster's (0: one frame per Cluster) and the flags.
    static let blockHeaderBytes = 4

    /// The nominal frame period in ticks: the last frame's share of the file's duration.
    static func framePeriodTicks(nominalRate: Double) -> Double {
        nominalRate > 0 ? 1e9 / nominalRate / Double(nanosecondsPerTick) : 0
    }

    /// The FourCC a raw format is stored under (the track's ColourSpace; FFmpeg's and VLC's
    /// readers map it back to the pixel format), or nil for MJPEG.
    private static func withColourSpace<Result>(
        of pixelFormat: VideoFormat.PixelFormat, _ body: (UnsafePointer<UInt8>?) -> Result
    ) -> Result {
        let fourCC: [UInt8]? =
            switch pixelFormat {
            case .mjpeg, .ffv1, .h264, .hevc, .fwht: nil
            case .yuyv: Array("YUY2".utf8)
            case .nv12: Array("NV12".utf8)
            case .grey: Array("Y800".utf8)
            // "Y1" 0 16: 16-bit little-endian samples, grey or depth alike (FFmpeg reads gray16le).
            case .y16, .z16: [0x59, 0x31, 0, 16]
            // 0xBA, the first and second colours, 8 bits: FFmpeg's tags of its bayer_*8 formats.
            case .bayerBGGR: [0xBA, 0x42, 0x47, 8]
            case .bayerGBRG: [0xBA, 0x47, 0x42, 8]
            case .bayerGRBG: [0xBA, 0x47, 0x52, 8]
            case .bayerRGGB: [0xBA, 0x52, 0x47, 8]
            }
        guard let fourCC else { return body(nil) }
        return fourCC.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    private static func failure(_ error: CMatroska_error, path: String) -> MediaError {
        MediaError(cError: error, path: path)
    }

    deinit {
        if !finished { try? finish() }
        CMatroska_free(file)
        if fd >= 0 { Glibc.close(fd) }
        if directFd >= 0 { Glibc.close(directFd) }
        if readFd >= 0 { Glibc.close(readFd) }
    }

    /// Makes every frame written so far durable (`fdatasync`): each frame is already written
    /// to the file when `writeFrame` returns. Then reads the last frame back (`verify`).
    public func sync() throws(MediaError) {
        guard !finished else { return }
        let started = syncTimer?.begin()
        let synced = fdatasync(fd)
        let code = errno
        if let started { syncTimer?.end(started) }
        if synced != 0 { throw .system(code, "fdatasync", path: path) }
        try verify()
    }

    /// Reads back the last frame's SimpleBlock header and its first and last bytes, and throws
    /// when the file does not hold what was written there: a file system that lost or zeroed
    /// written bytes (#43) is an error while recording, not a surprise for the reader. Two small
    /// reads, at each sync.
    public func verify() throws(MediaError) {
        guard frameCount > 0, lastFrameProbed > 0 else { return }
        let header = Self.blockHeaderBytes
        let headStart = lastFrameStart - UInt64(header)
        guard try readBack(at: headStart, count: header + lastFrameProbed) else {
            throw lost("the file ends before it")
        }
        let flagsOK = (readBack[3] & 0x80 != 0) == lastFrameKeyframe
        guard readBack[0] == 0x81, readBack[1] == 0, readBack[2] == 0, flagsOK else {
            throw lost("its SimpleBlock header reads back as \(hex(readBack[0..<header]))")
        }
        guard readBack[header..<(header + lastFrameProbed)].elementsEqual(lastFrameHead[0..<lastFrameProbed]) else {
            throw lost("its first bytes read back as \(hex(readBack[header..<(header + lastFrameProbed)]))")
        }
        guard try readBack(at: lastFrameEnd - UInt64(lastFrameProbed), count: lastFrameProbed),
            readBack[0..<lastFrameProbed].elementsEqual(lastFrameTail[0..<lastFrameProbed])
        else { throw lost("its last bytes do not read back as written") }
    }

    private func lost(_ what: String) -> MediaError {
        MediaError(
            path: path, operation: "reading back frame \(frameCount - 1)", code: EIO,
            message:
                "the file does not hold what was written: \(what); the "
                + "file system lost written data (see `fieldcap validate`)"
        )
    }

    private func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String($0, radix: 16) }.joined(separator: " ")
    }

    /// Reads `count` bytes at `offset` into `readBack`; false when the file ends before.
    private func readBack(at offset: UInt64, count: Int) throws(MediaError) -> Bool {
        var done = 0
        while done < count {
            let got = SystemCall.retryingInterrupts {
                readBack.withUnsafeMutableBytes {
                    pread(readFd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                }
            }
            if got < 0 { throw .system(errno, "pread (reading back)", path: path) }
            if got == 0 { return false }
            done += got
        }
        return true
    }

    /// Writes one frame captured at `captureNs` (`CLOCK_MONOTONIC_RAW`).
    /// `keyframe: false` for a frame that needs the ones before it (a hardware encoder's P-frame).
    public func writeFrame(_ bytes: UnsafeRawBufferPointer, captureNs: UInt64, keyframe: Bool = true) throws(MediaError)
    {
        guard let file, !finished else {
            throw MediaError(path: path, operation: "write frame", code: -1, message: "the file is already closed")
        }
        let first = firstNs ?? captureNs
        firstNs = first
        // A time before the first frame's (a damaged file being salvaged) counts as the first's.
        let sinceFirst = captureNs >= first ? captureNs - first : 0
        var tick = (sinceFirst + Self.nanosecondsPerTick / 2) / Self.nanosecondsPerTick
        // Readers need strictly increasing times; two frames in one tick are nudged apart by
        // one tick (capture_ns in the timestamps file stays exact).
        if let lastTick, tick <= lastTick { tick = lastTick + 1 }
        var error = CMatroska_error()
        let started = writeTimer?.begin()
        let written = CMatroska_write_frame(file, bytes.baseAddress, bytes.count, tick, keyframe, &error)
        if let started { writeTimer?.end(started) }
        guard written == 0 else { throw Self.failure(error, path: path) }
        lastTick = tick
        frameCount += 1
        // What `verify` reads back: the frame ends where the file does.
        lastFrameEnd = CMatroska_position(file)
        lastFrameStart = lastFrameEnd - UInt64(bytes.count)
        lastFrameKeyframe = keyframe
        let probed = min(Self.probeBytes, bytes.count)
        lastFrameProbed = probed
        if probed > 0 {
            lastFrameHead.withUnsafeMutableBytes {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<probed]))
            }
            lastFrameTail.withUnsafeMutableBytes {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - probed)...]))
            }
        }
    }

    /// Writes the file's duration and the Segment's size, makes the file durable and closes it.
    /// Then counts the frames the file holds, reading their headers back: fewer than were
    /// written is an error (a file system lost written data), never a quiet success.
    public func finish() throws(MediaError) {
        guard !finished, let file else { return }
        finished = true
        let duration = lastTick.map { Double($0) + framePeriodTicks } ?? 0
        var error = CMatroska_error()
        guard CMatroska_finish(file, duration, &error) == 0 else { throw Self.failure(error, path: path) }
        let started = syncTimer?.begin()
        let synced = fdatasync(fd)
        let syncError = errno
        if let started { syncTimer?.end(started) }
        if synced != 0 { throw .system(syncError, "fdatasync", path: path) }
        let held = try MatroskaScan(path: path).frames.count
        if held != frameCount {
            throw MediaError(
                path: path, operation: "counting the frames written", code: EIO,
                message:
                    "the file holds \(held) of the \(frameCount) frames written: the file system lost written data")
        }
        if directFd >= 0 {
            Glibc.close(directFd)
            directFd = -1
        }
        // close is never retried: the descriptor is gone even when it reports EINTR.
        let closed = Glibc.close(fd)
        let code = errno
        fd = -1
        if closed != 0 && code != EINTR { throw .system(code, "close", path: path) }
    }
}
