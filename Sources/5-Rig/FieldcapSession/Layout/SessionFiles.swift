import FoundationEssentials
import Glibc

/// What a session directory holds, judged by `SessionLayout`'s names: whether every file in it is
/// one fieldcap writes (a directory that holds anything else is never deleted), and the space it
/// takes.
public enum SessionFiles {
    /// The first name in `path` that is not a file fieldcap writes for a session of `streams`, if
    /// any; "an unreadable directory" when it cannot be listed.
    public static func stranger(in path: String, streams: [String]) -> String? {
        let expected = names(streams: streams)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else {
            return "an unreadable directory"
        }
        return names.sorted().first { !expected.contains($0) }
    }

    /// The names of the files fieldcap writes in a session of `streams`: the calibration
    /// (`--intrinsics`) among them, which every segment of a calibrated recording holds.
    public static func names(streams: [String]) -> Set<String> {
        // The sidecar's temporary file is fieldcap's too: a rewrite (`check-sync --save`) cut off
        // by a crash leaves it beside the sidecar it was to replace.
        var expected: Set<String> = [
            SessionLayout.manifestName, SessionLayout.syncPointName, SessionLayout.sidecarName,
            SessionLayout.sidecarName + ".tmp", SessionLayout.reserveName, SessionCalibration.fileName,
            MarkLine.fileName,
        ]
        for id in streams {
            expected.formUnion([
                SessionLayout.videoName(id), SessionLayout.frameLogName(id), SessionLayout.timestampsName(id),
                SessionLayout.sensorName(id),
            ])
        }
        return expected
    }

    /// Bytes the files directly in `path` take on disk (allocated blocks).
    public static func bytesOnDisk(_ path: String) -> UInt64 {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return 0 }
        var total: UInt64 = 0
        for name in names {
            var info = stat()
            if lstat("\(path)/\(name)", &info) == 0 { total += UInt64(info.st_blocks) * 512 }
        }
        return total
    }
}
