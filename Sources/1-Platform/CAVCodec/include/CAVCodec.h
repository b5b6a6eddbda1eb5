// FFmpeg's libavcodec (the FFV1 encoder and decoder, libx264 for H.264) and libavformat (the MP4
// muxer): the headers, the calls fieldcap makes, loaded on first use, and accessors for the
// fixed-size arrays Swift sees as tuples.
//
// fieldcap does not link FFmpeg: a rig that never asks for encode=ffv1 or an MP4 should not map
// libavcodec and the ~100 libraries it brings (most of a small rig's resident memory beside the
// V4L2 buffers, and most of a command's start-up). `CAVCodec_load` opens libavcodec when an FFV1
// or H.264 stream is first encoded or decoded, `CAVFormat_load` libavformat when an MP4 is first
// written; each `CAVCodec_<name>` below calls FFmpeg's `<name>` from them (libavutil's through
// libavcodec's own dependency).
#ifndef CAVCODEC_H
#define CAVCODEC_H

#include <libavcodec/avcodec.h>
#include <libavcodec/version_major.h>
#include <libavformat/avformat.h>
#include <libavformat/version_major.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/mem.h>

/// Opens libavcodec once. Returns NULL when the calls below are ready, else why they are not
/// (the library is missing, or lacks a function).
const char *CAVCodec_load(void);

/// The shared library `CAVCodec_load` opens: the one whose headers fieldcap was built with.
const char *CAVCodec_library_name(void);

// The FFmpeg functions fieldcap calls: X(return type, name, parameters, arguments) for those
// returning a value, V(name, parameters, arguments) for the others. Each is declared below as
// `CAVCodec_<name>`; calling one before `CAVCodec_load` has succeeded ends the process.
#define CAVCODEC_FUNCTIONS(X, V)                                                                        \
    X(const AVCodec *, avcodec_find_encoder, (enum AVCodecID id), (id))                               \
    X(const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id))                               \
    X(const AVCodec *, avcodec_find_encoder_by_name, (const char *name), (name))                      \
    X(int, avcodec_parameters_from_context, (AVCodecParameters * parameters,                          \
      const AVCodecContext *context), (parameters, context))                                          \
    V(av_packet_rescale_ts, (AVPacket * packet, AVRational from, AVRational to), (packet, from, to))  \
    X(AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))                      \
    X(int, avcodec_open2, (AVCodecContext * context, const AVCodec *codec, AVDictionary **options),   \
      (context, codec, options))                                                                      \
    V(avcodec_free_context, (AVCodecContext * *context), (context))                                   \
    X(int, avcodec_send_frame, (AVCodecContext * context, const AVFrame *frame), (context, frame))    \
    X(int, avcodec_receive_packet, (AVCodecContext * context, AVPacket *packet), (context, packet))   \
    X(int, avcodec_send_packet, (AVCodecContext * context, const AVPacket *packet), (context, packet)) \
    X(int, avcodec_receive_frame, (AVCodecContext * context, AVFrame *frame), (context, frame))       \
    X(AVFrame *, av_frame_alloc, (void), ())                                                          \
    V(av_frame_free, (AVFrame * *frame), (frame))                                                     \
    X(int, av_frame_get_buffer, (AVFrame * frame, int align), (frame, align))                         \
    X(int, av_frame_make_writable, (AVFrame * frame), (frame))                                        \
    V(av_frame_unref, (AVFrame * frame), (frame))                                                     \
    X(AVPacket *, av_packet_alloc, (void), ())                                                        \
    V(av_packet_free, (AVPacket * *packet), (packet))                                                 \
    V(av_packet_unref, (AVPacket * packet), (packet))                                                 \
    X(int, av_dict_set, (AVDictionary * *dictionary, const char *key, const char *value, int flags),  \
      (dictionary, key, value, flags))                                                                \
    V(av_dict_free, (AVDictionary * *dictionary), (dictionary))                                       \
    X(void *, av_mallocz, (size_t size), (size))                                                      \
    X(int, av_strerror, (int code, char *buffer, size_t size), (code, buffer, size))                  \
    V(av_log_set_level, (int level), (level))

/// Opens libavformat once (after libavcodec): NULL when the calls of `CAVFORMAT_FUNCTIONS` are
/// ready, else why they are not.
const char *CAVFormat_load(void);

/// The shared library `CAVFormat_load` opens.
const char *CAVFormat_library_name(void);

// The libavformat functions fieldcap calls, as `CAVCODEC_FUNCTIONS`; calling one before
// `CAVFormat_load` has succeeded ends the process.
#define CAVFORMAT_FUNCTIONS(X, V)                                                                        \
    X(int, avformat_alloc_output_context2,                                                              \
      (AVFormatContext * *context, const AVOutputFormat *format, const char *name, const char *path),   \
      (context, format, name, path))                                                                    \
    X(AVStream *, avformat_new_stream, (AVFormatContext * context, const AVCodec *codec), (context, codec)) \
    X(int, avio_open, (AVIOContext * *io, const char *url, int flags), (io, url, flags))                 \
    X(int, avio_closep, (AVIOContext * *io), (io))                                                      \
    X(int, avformat_write_header, (AVFormatContext * context, AVDictionary **options), (context, options)) \
    X(int, av_interleaved_write_frame, (AVFormatContext * context, AVPacket *packet), (context, packet)) \
    X(int, av_write_trailer, (AVFormatContext * context), (context))                                    \
    V(avformat_free_context, (AVFormatContext * context), (context))

#define CAVCODEC_DECLARE(type, name, parameters, arguments) type CAVCodec_##name parameters;
#define CAVCODEC_DECLARE_VOID(name, parameters, arguments) void CAVCodec_##name parameters;
CAVCODEC_FUNCTIONS(CAVCODEC_DECLARE, CAVCODEC_DECLARE_VOID)
CAVFORMAT_FUNCTIONS(CAVCODEC_DECLARE, CAVCODEC_DECLARE_VOID)
#undef CAVCODEC_DECLARE
#undef CAVCODEC_DECLARE_VOID

/// The corresponding C macro is `AVERROR(e)`.
static inline int CAVCodec_AVERROR(int e) { return AVERROR(e); }

/// The corresponding C macro is `AVERROR_EOF`.
static inline int CAVCodec_AVERROR_EOF(void) { return AVERROR_EOF; }

/// `AVFrame.data[plane]`: Swift sees the array as a tuple.
static inline uint8_t *CAVCodec_frame_plane(const AVFrame *frame, int plane) { return frame->data[plane]; }

/// `AVFrame.linesize[plane]`.
static inline int CAVCodec_frame_stride(const AVFrame *frame, int plane) { return frame->linesize[plane]; }

#endif
