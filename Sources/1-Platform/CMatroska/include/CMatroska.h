// libmatroska (Debian: libmatroska-dev, with libebml-dev) for fieldcap's video files, behind a C
// interface Swift can call: the library is C++.
//
// Why libmatroska and not FFmpeg's libavformat: a camera frame is written to the file straight
// from the kernel's mmap'd buffer, in one writev(2) with its few bytes of Cluster and SimpleBlock
// header. libavformat's Matroska muxer copies every frame into the cluster it builds in memory,
// and then again into its I/O buffer; and loading libavformat maps about 140 libraries, most
// of a small rig's resident memory.
#ifndef CMATROSKA_H
#define CMATROSKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The files' timestamp unit (their TimestampScale), in nanoseconds: Matroska's usual 1 ms,
/// which every player expects.
#define CMATROSKA_NANOSECONDS_PER_TICK 1000000ULL

/// One Matroska file with one video track, written through a descriptor the caller owns.
typedef struct CMatroska_writer CMatroska_writer;

/// The video track of a file.
typedef struct {
    /// The Matroska codec ID: "V_UNCOMPRESSED" (raw frames), "V_MJPEG" or "V_FFV1".
    const char *codec_id;
    /// For "V_UNCOMPRESSED": the pixel format's FourCC, 4 bytes (the track's ColourSpace), else NULL.
    const uint8_t *colour_space;
    uint32_t width;
    uint32_t height;
    /// The nominal frame period in nanoseconds (the track's DefaultDuration); 0 for none.
    uint64_t default_duration_ns;
    /// The codec's setup a decoder needs before the first frame (the track's CodecPrivate:
    /// FFV1's configuration record), or NULL.
    const uint8_t *codec_private;
    size_t codec_private_size;
} CMatroska_video_track;

/// Why a call failed: the errno (EIO when the library failed without one), what was being done
/// (a system call's name, or what libmatroska was asked to write) and a message.
typedef struct {
    int code;
    char operation[64];
    char message[192];
} CMatroska_error;

/// `path` opened again for writing with O_DIRECT, for CMatroska_create, if it is still the file
/// `fd` is (nothing replaced it in between). Returns -1 when the filesystem refuses O_DIRECT or
/// it is another file.
int CMatroska_open_direct(const char *path, int fd);

/// The type of the file system holding `path` (statfs's f_type, `linux/magic.h`) in `type`.
/// Returns 0, or -1 with errno set. (Swift's Glibc module has no statfs.)
int CMatroska_filesystem_type(const char *path, uint64_t *type);

/// Writes the EBML header, a Segment of unknown size (a file cut short still reads to its last
/// whole frame), the segment Info (1 ms timestamps) and the track. Returns NULL with `error`
/// filled on failure.
///
/// `direct_fd` is -1, or the same file opened again with O_DIRECT: where its filesystem does
/// direct I/O, large frames in suitably aligned buffers are written through it, each Cluster
/// preceded by a Void element that puts the frame on an aligned offset.
CMatroska_writer *CMatroska_create(int fd, int direct_fd, const CMatroska_video_track *track, const char *writing_app,
                                   CMatroska_error *error);

/// Writes one frame in a Cluster of its own at `timestamp_ms` (from the file's start; strictly
/// increasing), flagged a keyframe when `keyframe` (it decodes on its own: every raw, JPEG and
/// FFV1 frame; a hardware encoder's I-frames). `bytes` are written without a copy: one writev(2) of the
/// Cluster and SimpleBlock headers and the frame, or, with direct I/O, the headers and the
/// frame's tail through the page cache and the rest of the frame straight from `bytes` to the
/// disk. Returns 0, or -1 with `error` filled.
int CMatroska_write_frame(CMatroska_writer *writer, const void *bytes, size_t count, uint64_t timestamp_ms,
                          bool keyframe, CMatroska_error *error);

/// Gives the file its Duration (`duration_ms`) and the Segment its size. The frames stay
/// readable if this never happens. Returns 0, or -1 with `error` filled.
int CMatroska_finish(CMatroska_writer *writer, double duration_ms, CMatroska_error *error);

/// Whether frames are being written with direct I/O (the file's filesystem does it, and no
/// direct write has been refused).
bool CMatroska_writes_direct(const CMatroska_writer *writer);

/// Where the next byte goes: the end of the last frame written, once `CMatroska_write_frame`
/// returned (its frame is the last thing in its Cluster).
uint64_t CMatroska_position(const CMatroska_writer *writer);

/// Frees the writer (not the descriptors).
void CMatroska_free(CMatroska_writer *writer);

/// Receives one frame read back: its bytes (valid during the call only), its time in
/// nanoseconds on the file's timeline, and whether it is flagged a keyframe. Returns 0 to go on,
/// anything else to stop.
typedef int (*CMatroska_frame_handler)(void *context, const uint8_t *bytes, size_t count, uint64_t time_ns,
                                       bool keyframe);

/// Reads the frames of the file's (first) video track in file order, for a recording that was
/// never finished: reading stops quietly at the end of the file, at the first element cut short,
/// at the first that cannot be read and at the first that does not start where the one before it
/// ended (a power cut can leave zeros where a Cluster's header was), after the frames before it.
/// Returns how many frames went to `handler`, or -1 with `error` filled when the file cannot be
/// opened.
long CMatroska_read_frames(const char *path, CMatroska_frame_handler handler, void *context, CMatroska_error *error);

/// What CMatroska_scan_frames found the file to be.
typedef struct {
    /// It starts with an EBML header whose DocType is "matroska" or "webm".
    bool is_matroska;
    /// Its Tracks element names a video track (the one whose frames are counted).
    bool has_video_track;
    /// Where the Cluster of the last frame seen ends (0: no frame), and the file's size: what
    /// lies between them was not read as frames (a tail cut short, or damage).
    uint64_t frames_end;
    uint64_t file_size;
} CMatroska_file_info;

/// Receives one frame seen by CMatroska_scan_frames: its size and its time in nanoseconds on the
/// file's timeline. Returns 0 to go on, anything else to stop.
typedef int (*CMatroska_frame_seen)(void *context, uint64_t size, uint64_t time_ns);

/// Finds the frames of the file's (first) video track as CMatroska_read_frames does, reading
/// only each block's header, not the frames' bytes: an hour of video is counted by reading a few
/// kilobytes a frame. A frame counts only when its block lies wholly inside the file. `handler`
/// may be NULL. Returns how many frames were seen, or -1 with `error` filled when the file cannot
/// be opened; `info` (may be NULL) says what the file is.
long CMatroska_scan_frames(const char *path, CMatroska_file_info *info, CMatroska_frame_seen handler, void *context,
                           CMatroska_error *error);

/// Copies the CodecPrivate of the file's (first) video track into `buffer` (at most `capacity`
/// bytes). Returns its whole size (0 when the track has none), or -1 with `error` filled when the
/// file cannot be opened or has no video track.
long CMatroska_codec_private(const char *path, uint8_t *buffer, size_t capacity, CMatroska_error *error);

/// Makes a file CMatroska_create wrote (with `writing_app`), finished or not, a finished file of
/// its first `keep` frames (as CMatroska_scan_frames counts them), in place: it ends after the
/// Cluster of the last frame kept, its Segment gets its size and its Duration the last frame's
/// time plus `frame_period_ms`, as CMatroska_finish would write them. Nothing is rewritten, so an
/// hour of video is finished at once and with no free space. Returns 0 when done, 1 (nothing
/// changed) when the file is missing, not in that layout or has fewer than `keep` frames, -1 with
/// `error` filled on failure.
int CMatroska_finish_in_place(const char *path, long keep, double frame_period_ms, const char *writing_app,
                              CMatroska_error *error);

#ifdef __cplusplus
}
#endif

#endif
