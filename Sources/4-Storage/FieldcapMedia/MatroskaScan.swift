import CMatroska

/// What a Matroska file holds, found without reading its frames' bytes (`CMatroska_scan_frames`
/// reads each block's header only): whether it is Matroska with a video track, and each frame's
/// size and time. An hour of a 30 fps camera is a few hundred megabytes of headers read, not the
/// hundreds of gigabytes of frames.
///
/// Like salvage, it ends at the first frame cut short by the end of the file and at the first
/// element that does not start where the one before it ended.
public struct MatroskaScan: Sendable {
    /// The file starts with an EBML header whose DocType is "matroska" or "webm".
    public var isMatroska = false
    /// Its Tracks element names a video track.
    public var hasVideoTrack = false
    /// Each frame of the video track, in file order: its size in bytes and its time on the file's
    /// timeline in nanoseconds (whole milliseconds in fieldcap's files, the first frame at 0).
    public var frames: [(size: UInt64, timeNs: UInt64)] = []
    /// Where the Cluster of the last frame ends (0: no frame), and the file's size.
    public var framesEnd: UInt64 = 0
    public var fileSize: UInt64 = 0

    /// Scans `path`. Throws when the file cannot be opened; a file that is not Matroska is a scan
    /// with `isMatroska` false.
    public init(path: String) throws(MediaError) {
        var info = CMatroska_file_info()
        var error = CMatroska_error()
        var found: [(size: UInt64, timeNs: UInt64)] = []
        let count = withUnsafeMutablePointer(to: &found) { found in
            CMatroska_scan_frames(
                path, &info,
                { context, size, time in
                    context!.assumingMemoryBound(to: [(size: UInt64, timeNs: UInt64)].self).pointee.append((size, time))
                    return 0
                }, found, &error)
        }
        guard count >= 0 else { throw MediaError(cError: error, path: path) }
        isMatroska = info.is_matroska
        hasVideoTrack = info.has_video_track
        frames = found
        framesEnd = info.frames_end
        fileSize = info.file_size
    }
}
