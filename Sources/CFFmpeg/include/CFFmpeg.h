// FFmpeg's libavformat for fieldcap's video files: the headers, real symbols for the
// function-like macros Swift cannot call, and the calls fieldcap makes, loaded on first use.
//
// fieldcap does not link FFmpeg: Debian's libavformat brings about 140 shared libraries, and
// loading and relocating them is most of the start-up of every fieldcap command (about 0.5 s of
// CPU on a slow core), also of those that never write a video (an IMU-only recording, validate,
// list, check, bench jitter). `CFFmpeg_load` opens libavformat when a video is first written
// or read; each `CFFmpeg_<name>` below calls FFmpeg's `<name>` from it.
#ifndef CFFMPEG_H
#define CFFMPEG_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/version_major.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/mathematics.h>

/// Opens libavformat (and through it libavcodec and libavutil) once. Returns NULL when the calls
/// below are ready, else why they are not (the library is missing, or lacks a function).
const char *CFFmpeg_load(void);

/// The shared library `CFFmpeg_load` opens: the one whose headers fieldcap was built with.
const char *CFFmpeg_library_name(void);

// The FFmpeg functions fieldcap calls: X(return type, name, parameters, arguments) for those
// returning a value, V(name, parameters, arguments) for the others. Each is declared below as
// `CFFmpeg_<name>`; calling one before `CFFmpeg_load` has succeeded ends the process.
#define CFFMPEG_FUNCTIONS(X, V)                                                                      \
    X(int, avformat_alloc_output_context2,                                                           \
      (AVFormatContext **context, const AVOutputFormat *format, const char *name, const char *path), \
      (context, format, name, path))                                                                 \
    X(AVStream *, avformat_new_stream, (AVFormatContext *context, const AVCodec *codec), (context, codec)) \
    X(int, avformat_write_header, (AVFormatContext *context, AVDictionary **options), (context, options)) \
    X(int, av_write_frame, (AVFormatContext *context, AVPacket *packet), (context, packet))        \
    X(int, av_write_trailer, (AVFormatContext *context), (context))                                 \
    V(avformat_free_context, (AVFormatContext *context), (context))                                 \
    X(int, avformat_open_input,                                                                      \
      (AVFormatContext **context, const char *path, const AVInputFormat *format, AVDictionary **options), \
      (context, path, format, options))                                                              \
    X(int, avformat_find_stream_info, (AVFormatContext *context, AVDictionary **options), (context, options)) \
    X(int, av_read_frame, (AVFormatContext *context, AVPacket *packet), (context, packet))         \
    V(avformat_close_input, (AVFormatContext **context), (context))                                 \
    X(AVIOContext *, avio_alloc_context,                                                             \
      (unsigned char *buffer, int size, int writable, void *opaque,                                  \
       int (*read)(void *opaque, uint8_t *buffer, int size),                                         \
       int (*write)(void *opaque, uint8_t *buffer, int size),                                        \
       int64_t (*seek)(void *opaque, int64_t offset, int whence)),                                   \
      (buffer, size, writable, opaque, read, write, seek))                                           \
    V(avio_flush, (AVIOContext *io), (io))                                                           \
    V(avio_context_free, (AVIOContext **io), (io))                                                   \
    X(AVPacket *, av_packet_alloc, (void), ())                                                       \
    V(av_packet_unref, (AVPacket *packet), (packet))                                                 \
    V(av_packet_free, (AVPacket **packet), (packet))                                                 \
    X(int, av_dict_set, (AVDictionary **dictionary, const char *key, const char *value, int flags), \
      (dictionary, key, value, flags))                                                               \
    V(av_dict_free, (AVDictionary **dictionary), (dictionary))                                       \
    X(void *, av_malloc, (size_t size), (size))                                                      \
    V(av_freep, (void *pointer), (pointer))                                                          \
    X(int64_t, av_rescale_q, (int64_t value, AVRational from, AVRational to), (value, from, to))    \
    X(AVRational, av_d2q, (double value, int max), (value, max))                                     \
    X(int, av_log_get_level, (void), ())                                                             \
    V(av_log_set_level, (int level), (level))                                                        \
    X(int, av_strerror, (int code, char *buffer, size_t size), (code, buffer, size))

#define CFFMPEG_DECLARE(type, name, parameters, arguments) type CFFmpeg_##name parameters;
#define CFFMPEG_DECLARE_VOID(name, parameters, arguments) void CFFmpeg_##name parameters;
CFFMPEG_FUNCTIONS(CFFMPEG_DECLARE, CFFMPEG_DECLARE_VOID)
#undef CFFMPEG_DECLARE
#undef CFFMPEG_DECLARE_VOID

/// The corresponding C macro is `AVERROR(e)`.
static inline int CFFmpeg_AVERROR(int e) { return AVERROR(e); }

/// The corresponding C macro is `AVERROR_EOF`.
static inline int CFFmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }

/// The corresponding C macro is `AVIO_FLAG_WRITE`.
static inline int CFFmpeg_AVIO_FLAG_WRITE(void) { return AVIO_FLAG_WRITE; }

/// The corresponding C macro is `MKTAG(a, b, c, d)`.
static inline unsigned int CFFmpeg_MKTAG(char a, char b, char c, char d) { return MKTAG(a, b, c, d); }

/// `av_err2str` is a macro around a compound literal; this writes into the caller's buffer.
static inline const char *CFFmpeg_av_err2str(int code, char *buffer, size_t size) {
    if (CFFmpeg_av_strerror(code, buffer, size) < 0 && size > 0) buffer[0] = 0;
    return buffer;
}

#endif
