import FieldcapCore
import SyncField

#if canImport(Glibc)
import Glibc
#endif

/// `{id}.frames.ndjson`: one line per video frame with what SyncField has no field for, so a frame
/// can be traced from its timestamp line to the kernel. (Not `.jsonl`: in a SyncField session
/// every `{name}.jsonl` is a sensor stream's file.)
///
///     {"frame_number":0,"sequence":0,"device_ns":123,"dequeue_ns":456,"capture_ns":450,"flags":8193,"bytes_used":614400}
///
/// Lines are collected and written in batches; `sync` makes them durable.
///
/// Writer-thread-bound.
final class FrameLog {
    let path: String
    private let fd: Int32
    private let pending = ByteBuffer(capacity: 80 * 1024)

    init(path: String) throws(MediaError) {
        self.path = path
        fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw MediaError(path: path, operation: "open", code: errno, message: String(cString: strerror(errno))) }
    }

    deinit { Glibc.close(fd) }

    func append(_ record: CaptureRecord, frameNumber: Int) throws(MediaError) {
        pending.append(#"{"frame_number":"#)
        pending.appendJSONNumber(frameNumber)
        pending.append(#","sequence":"#)
        pending.appendJSONNumber(record.sequence)
        pending.append(#","device_ns":"#)
        pending.appendJSONNumber(record.deviceNs)
        pending.append(#","dequeue_ns":"#)
        pending.appendJSONNumber(record.dequeueNs)
        pending.append(#","capture_ns":"#)
        pending.appendJSONNumber(record.captureNs)
        pending.append(#","flags":"#)
        pending.appendJSONNumber(UInt64(record.flags))
        pending.append(#","bytes_used":"#)
        pending.appendJSONNumber(UInt64(record.bytesUsed))
        pending.append("}\n")
        if pending.count >= 64 * 1024 { try flush() }
    }

    func flush() throws(MediaError) {
        var offset = 0
        let bytes = pending.bytes
        while offset < bytes.count {
            let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw MediaError(path: path, operation: "write", code: errno, message: String(cString: strerror(errno)))
            }
            offset += written
        }
        pending.removeAll()
    }

    func sync() throws(MediaError) {
        try flush()
        if fdatasync(fd) != 0 { throw MediaError(path: path, operation: "fdatasync", code: errno, message: String(cString: strerror(errno))) }
    }
}
