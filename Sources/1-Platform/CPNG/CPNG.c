#include "CPNG.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void append(png_structp png, png_bytep data, size_t length) {
    CPNG_output *output = (CPNG_output *)png_get_io_ptr(png);
    if (output->count + length > output->capacity) {
        size_t capacity = output->capacity ? output->capacity : 65536;
        while (capacity < output->count + length) capacity *= 2;
        uint8_t *bytes = realloc(output->bytes, capacity);
        if (bytes == NULL) png_error(png, "out of memory");
        output->bytes = bytes;
        output->capacity = capacity;
    }
    memcpy(output->bytes + output->count, data, length);
    output->count += length;
}

static void flush(png_structp png) { (void)png; }

static void keep_message(png_structp png, png_const_charp text) {
    char *message = (char *)png_get_error_ptr(png);
    if (message != NULL) {
        strncpy(message, text, 255);
        message[255] = 0;
    }
    png_longjmp(png, 1);
}

static void ignore_warning(png_structp png, png_const_charp text) { (void)png; (void)text; }

int CPNG_encode(const void *pixels, uint32_t width, uint32_t height, int channels, int bit_depth, size_t stride,
                int level, CPNG_output *output, char *message) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, message, keep_message, ignore_warning);
    if (png == NULL) {
        if (message != NULL) strcpy(message, "libpng could not start an encoder");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (info == NULL || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_set_write_fn(png, output, append, flush);
    png_set_compression_level(png, level);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_SUB);
    png_set_IHDR(png, info, width, height, bit_depth, channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_write_info(png, info);
    if (bit_depth == 16) png_set_swap(png);  // PNG is big-endian; the frames are not
    for (uint32_t row = 0; row < height; row++) {
        png_write_row(png, (png_const_bytep)pixels + (size_t)row * stride);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 0;
}

void CPNG_free(CPNG_output *output) {
    free(output->bytes);
    output->bytes = NULL;
    output->count = output->capacity = 0;
}

int CPNG_decode_file(const char *path, int channels, uint8_t **pixels, uint32_t *width, uint32_t *height,
                     char *message) {
    // libpng's simplified API, which reports errors in the image structure, never by longjmp.
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, path)) {
        snprintf(message, 256, "%s: %s", path, image.message);
        return -1;
    }
    image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    uint8_t *buffer = malloc(PNG_IMAGE_SIZE(image));
    if (buffer == NULL || !png_image_finish_read(&image, NULL, buffer, 0, NULL)) {
        snprintf(message, 256, "%s: %s", path, buffer == NULL ? "out of memory" : image.message);
        free(buffer);
        png_image_free(&image);
        return -1;
    }
    *pixels = buffer;
    *width = image.width;
    *height = image.height;
    return 0;
}
