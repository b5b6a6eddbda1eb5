// Loads libavcodec and libavformat on first use and forwards fieldcap's calls to them (see
// CAVCodec.h for why).
#include "CAVCodec.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CAVCODEC_STRING(x) #x
#define CAVCODEC_EXPAND_STRING(x) CAVCODEC_STRING(x)
// The sonames of the libraries the headers describe: the structures fieldcap reads
// (AVCodecContext, AVFrame, AVPacket, AVFormatContext, AVStream) have those major versions'
// layouts, so no other may be loaded.
#define CAVCODEC_LIBRARY "libavcodec.so." CAVCODEC_EXPAND_STRING(LIBAVCODEC_VERSION_MAJOR)
#define CAVFORMAT_LIBRARY "libavformat.so." CAVCODEC_EXPAND_STRING(LIBAVFORMAT_VERSION_MAJOR)

#define CAVCODEC_POINTER(type, name, parameters, arguments) type(*name) parameters;
#define CAVCODEC_POINTER_VOID(name, parameters, arguments) void(*name) parameters;
static struct {
    CAVCODEC_FUNCTIONS(CAVCODEC_POINTER, CAVCODEC_POINTER_VOID)
} functions;
static struct {
    CAVFORMAT_FUNCTIONS(CAVCODEC_POINTER, CAVCODEC_POINTER_VOID)
} formatFunctions;

static pthread_once_t loading = PTHREAD_ONCE_INIT, loadingFormat = PTHREAD_ONCE_INIT;
static char failure[512], formatFailure[512];

// RTLD_LOCAL: FFmpeg's symbols (and those of the libraries it needs) stay out of the global
// scope, where they could shadow another library's. dlsym on the handle also searches the
// libraries it needs, so libavutil's functions resolve through libavcodec.
static void *open_library(const char *name, char *why, size_t size) {
    void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) snprintf(why, size, "%s", dlerror());
    return library;
}

#define CAVCODEC_RESOLVE(table, library, soname, why, name)                      \
    *(void **)&table.name = dlsym(library, #name);                               \
    if (table.name == NULL) {                                                    \
        snprintf(why, sizeof why, "%s has no %s", soname, #name);                \
        return;                                                                  \
    }

static void load(void) {
    void *library = open_library(CAVCODEC_LIBRARY, failure, sizeof failure);
    if (library == NULL) return;
#define CAVCODEC_RESOLVE_VALUE(type, name, parameters, arguments) \
    CAVCODEC_RESOLVE(functions, library, CAVCODEC_LIBRARY, failure, name)
#define CAVCODEC_RESOLVE_VOID(name, parameters, arguments) \
    CAVCODEC_RESOLVE(functions, library, CAVCODEC_LIBRARY, failure, name)
    CAVCODEC_FUNCTIONS(CAVCODEC_RESOLVE_VALUE, CAVCODEC_RESOLVE_VOID)
#undef CAVCODEC_RESOLVE_VALUE
#undef CAVCODEC_RESOLVE_VOID
    // FFmpeg's own log lines would interleave with fieldcap's status line; its errors reach the
    // user through the return codes fieldcap reports.
    functions.av_log_set_level(AV_LOG_QUIET);
}

static void loadFormat(void) {
    void *library = open_library(CAVFORMAT_LIBRARY, formatFailure, sizeof formatFailure);
    if (library == NULL) return;
#define CAVCODEC_RESOLVE_VALUE(type, name, parameters, arguments) \
    CAVCODEC_RESOLVE(formatFunctions, library, CAVFORMAT_LIBRARY, formatFailure, name)
#define CAVCODEC_RESOLVE_VOID(name, parameters, arguments) \
    CAVCODEC_RESOLVE(formatFunctions, library, CAVFORMAT_LIBRARY, formatFailure, name)
    CAVFORMAT_FUNCTIONS(CAVCODEC_RESOLVE_VALUE, CAVCODEC_RESOLVE_VOID)
#undef CAVCODEC_RESOLVE_VALUE
#undef CAVCODEC_RESOLVE_VOID
}

const char *CAVCodec_load(void) {
    pthread_once(&loading, load);
    return failure[0] ? failure : NULL;
}

const char *CAVCodec_library_name(void) { return CAVCODEC_LIBRARY; }

const char *CAVFormat_load(void) {
    const char *codec = CAVCodec_load();
    if (codec != NULL) return codec;
    pthread_once(&loadingFormat, loadFormat);
    return formatFailure[0] ? formatFailure : NULL;
}

const char *CAVFormat_library_name(void) { return CAVFORMAT_LIBRARY; }

// A programming error: the Swift side loads the library (and reports a failure) before its
// first call.
static void require_loaded(const char *problem, const char *name) {
    if (problem == NULL) return;
    fprintf(stderr, "fieldcap: %s called without its library: %s\n", name, problem);
    abort();
}

#define CAVCODEC_FORWARD(type, name, parameters, arguments) \
    type CAVCodec_##name parameters {                       \
        require_loaded(CAVCodec_load(), #name);             \
        return functions.name arguments;                    \
    }
#define CAVCODEC_FORWARD_VOID(name, parameters, arguments) \
    void CAVCodec_##name parameters {                      \
        require_loaded(CAVCodec_load(), #name);            \
        functions.name arguments;                          \
    }
CAVCODEC_FUNCTIONS(CAVCODEC_FORWARD, CAVCODEC_FORWARD_VOID)

#define CAVFORMAT_FORWARD(type, name, parameters, arguments) \
    type CAVCodec_##name parameters {                        \
        require_loaded(CAVFormat_load(), #name);             \
        return formatFunctions.name arguments;               \
    }
#define CAVFORMAT_FORWARD_VOID(name, parameters, arguments) \
    void CAVCodec_##name parameters {                       \
        require_loaded(CAVFormat_load(), #name);            \
        formatFunctions.name arguments;                     \
    }
CAVFORMAT_FUNCTIONS(CAVFORMAT_FORWARD, CAVFORMAT_FORWARD_VOID)
