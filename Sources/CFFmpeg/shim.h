// FFmpeg's libavformat for fieldcap's video files: the headers, plus real symbols for the
// function-like macros Swift cannot call.
#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/mathematics.h>

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
    return av_make_error_string(buffer, size, code);
}

#endif
