import FieldcapCore
import FieldcapOutput
import FieldcapSystem
import SyncField

#if canImport(Glibc)
    import Glibc
#endif

/// `{id}.frames.ndjson`: one line per video frame with what SyncField has no field for, so a frame
/// can be traced from its timestamp line to the kernel. (Not `.jsonl`: in a SyncField session
/// every `{name}.jsonl` is a sensor stream's file.)
///
///     {"frame_number":0,"sequence":0,"device_ns":123,"dequeue_ns":456,"capture_ns":450,
///      "uncertainty_ns":1000,"flags":8193,"bytes_used":614400}
///
/// A camera that reports its own start of exposure (a UVC camera's PTS, through its metadata
/// node) adds `exposure_start_ns` and `exposure_uncertainty_ns`, whichever instant `capture_ns`
/// is; with `stamp=exposure-middle`, `exposure_time_ns`, the exposure time its middle was taken
/// with (the camera's, followed while it records).
///
/// It also holds every value of the frame's timestamp line (`capture_ns`, `frame_number`,
/// `uncertainty_ns`; the rest is the session's), so `fieldcap recover` can write back the lines a
/// power cut took from the timestamps file, which the SyncField writer syncs on its own schedule.
///
/// Written through an `OutputFile` (whole lines only), each line as soon as it is made,
/// right after its frame: a killed recorder leaves no frame in the video without its line here,
/// where a batch would leave up to a second of them, whose timestamp lines (in the SyncField
/// writer's batch) are then lost with them. `sync` makes the lines durable.
///
/// Writer-thread-bound.
public final class FrameLog {
    private let file: OutputFile
    /// The same file opened for reading: `sync` reads the last line back from it.
    private let readFd: Int32
    /// Bytes written so far (where the file ends), and the last line written.
    private var written = 0
    private var lastLine: [UInt8] = []
    /// Reused for the line read back.
    private var readBack: [UInt8] = []

    /// The log's buffer. Each line is written as it is made; lines a full disk refused wait here
    /// for the space the recorder gives back as it stops (its disk reserve counts this).
    public static let batchBytes = 64 * 1024

    /// `watch` times the log's writes and syncs.
    public init(path: String, watch: DiskWatch? = nil) throws {
        file = OutputFile(
            path: path, fd: try OutputFile.open(path: path), batchBytes: Self.batchBytes,
            writeTimer: watch?.timer(path: path, operation: .write),
            syncTimer: watch?.timer(path: path, operation: .sync))
        readFd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard readFd >= 0 else { throw FileWriteError(path: path, operation: "open", errno: errno) }
        lastLine.reserveCapacity(512)
        readBack.reserveCapacity(512)
    }

    deinit {
        file.close()
        Glibc.close(readFd)
    }

    public func append(_ record: CaptureRecord, frameNumber: Int) throws {
        let line = file.pending
        let lineStart = line.count
        line.append(#"{"frame_number":"#)
        line.appendJSONNumber(frameNumber)
        line.append(#","sequence":"#)
        line.appendJSONNumber(record.sequence)
        line.append(#","device_ns":"#)
        line.appendJSONNumber(record.deviceNs)
        line.append(#","dequeue_ns":"#)
        line.appendJSONNumber(record.dequeueNs)
        line.append(#","capture_ns":"#)
        line.appendJSONNumber(record.captureNs)
        line.append(#","uncertainty_ns":"#)
        line.appendJSONNumber(record.uncertaintyNs)
        line.append(#","flags":"#)
        line.appendJSONNumber(UInt64(record.flags))
        line.append(#","bytes_used":"#)
        line.appendJSONNumber(UInt64(record.bytesUsed))
        if record.exposureStartNs != 0 {
            line.append(#","exposure_start_ns":"#)
            line.appendJSONNumber(record.exposureStartNs)
            line.append(#","exposure_uncertainty_ns":"#)
            line.appendJSONNumber(record.exposureUncertaintyNs)
        }
        if record.exposureTimeNs != 0 {
            line.append(#","exposure_time_ns":"#)
            line.appendJSONNumber(record.exposureTimeNs)
        }
        line.append("}\n")
        lastLine.removeAll(keepingCapacity: true)
        lastLine.append(contentsOf: line.bytes[lineStart...])
        let pendingBytes = line.count
        file.writePending()
        if let failure = file.failure { throw failure }
        written += pendingBytes
    }

    /// Makes the lines durable, then reads the last one back: a file system that lost or zeroed
    /// written bytes (#43) is an error while recording.
    public func sync() throws {
        file.writePending()
        file.sync()
        if let failure = file.failure { throw failure }
        try verify()
    }

    /// Reads the last line written back and throws when the file does not hold it.
    public func verify() throws {
        guard !lastLine.isEmpty else { return }
        let start = written - lastLine.count
        readBack.removeAll(keepingCapacity: true)
        readBack.append(contentsOf: repeatElement(0, count: lastLine.count))
        var done = 0
        while done < lastLine.count {
            let got = SystemCall.retryingInterrupts {
                readBack.withUnsafeMutableBytes {
                    pread(readFd, $0.baseAddress! + done, lastLine.count - done, off_t(start + done))
                }
            }
            if got < 0 {
                throw FileWriteError(path: file.path, operation: "pread (reading back)", errno: errno)
            }
            if got == 0 { break }
            done += got
        }
        guard done == lastLine.count, readBack == lastLine else {
            throw FrameLogLost(path: file.path, offset: start, lineBytes: lastLine.count, readBytes: done)
        }
    }
}

/// The frame log does not hold the line last written to it: the file system lost written data.
public struct FrameLogLost: Error, CustomStringConvertible {
    public var path: String
    public var offset: Int
    public var lineBytes: Int
    public var readBytes: Int

    public var description: String {
        readBytes < lineBytes
            ? "reading back \(path): the file ends before its last line "
                + "(\(lineBytes) bytes at \(offset)): the file system lost written data"
            : "reading back \(path): the last line (\(lineBytes) bytes at \(offset)) "
                + "does not read back as written: the file system lost written data"
    }
}
