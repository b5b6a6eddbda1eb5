// libpng (Debian: libpng-dev) for the PNG files of the EuRoC and image-folder exports. libpng
// reports errors by longjmp, which Swift cannot take: the encoder is this one C function, which
// sets its jump point and returns an error code instead.
#ifndef CPNG_H
#define CPNG_H

#include <stddef.h>
#include <stdint.h>

/// A growing output buffer; free `bytes` with CPNG_free.
typedef struct {
    uint8_t *bytes;
    size_t count;
    size_t capacity;
} CPNG_output;

/// Encodes `height` rows of `width` pixels (`channels` 1 grey or 3 RGB, `bit_depth` 8 or 16; 16-bit
/// samples little-endian in memory, as V4L2's) each `stride` bytes apart into a PNG in `output`,
/// zlib level `level` (0–9), PNG's "sub" filter. Returns 0, or -1 with `message` (256 bytes) filled.
int CPNG_encode(const void *pixels, uint32_t width, uint32_t height, int channels, int bit_depth, size_t stride,
                int level, CPNG_output *output, char *message);

void CPNG_free(CPNG_output *output);

/// Reads the PNG file at `path` as 8-bit pixels of `channels` 1 (grey) or 3 (RGB), rows packed,
/// into `*pixels` (free it with free()), its size into `width` and `height`. Returns 0, or -1 with
/// `message` (256 bytes) filled. The tests read their photographs with it.
int CPNG_decode_file(const char *path, int channels, uint8_t **pixels, uint32_t *width, uint32_t *height,
                     char *message);

#endif
