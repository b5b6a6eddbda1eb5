import FieldcapCore
import SyncField

/// `{id}.frames.ndjson`: one line per video frame with what SyncField has no field for, so a frame
/// can be traced from its timestamp line to the kernel. (Not `.jsonl`: in a SyncField session
/// every `{name}.jsonl` is a sensor stream's file.)
///
///     {"frame_number":0,"sequence":0,"device_ns":123,"dequeue_ns":456,"capture_ns":450,"uncertainty_ns":1000,"flags":8193,"bytes_used":614400}
///
/// It also holds every value of the frame's timestamp line (`capture_ns`, `frame_number`,
/// `uncertainty_ns`; the rest is the session's), so `fieldcap recover` can write back the lines a
/// power cut took from the timestamps file, which the SyncField writer syncs on its own schedule.
///
/// Written through SyncField's `OutputFile` (whole lines only), each line as soon as it is made,
/// right after its frame: a killed recorder leaves no frame in the video without its line here,
/// where a batch would leave up to a second of them, whose timestamp lines (in the SyncField
/// writer's batch) are then lost with them. `sync` makes the lines durable.
///
/// Writer-thread-bound.
public final class FrameLog {
    private let file: OutputFile

    /// The log's buffer. Each line is written as it is made; lines a full disk refused wait here
    /// for the space the recorder gives back as it stops (its disk reserve counts this).
    public static let batchBytes = 64 * 1024

    /// `watch` times the log's writes and syncs.
    public init(path: String, watch: DiskWatch? = nil) throws {
        file = OutputFile(path: path, fd: try OutputFile.open(path: path), batchBytes: Self.batchBytes, watch: watch)
    }

    deinit { file.close() }

    public func append(_ record: CaptureRecord, frameNumber: Int) throws {
        let line = file.pending
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
        line.append("}\n")
        file.writePending()
        if let failure = file.failure { throw failure }
    }

    public func sync() throws {
        file.writePending()
        file.sync()
        if let failure = file.failure { throw failure }
    }
}
