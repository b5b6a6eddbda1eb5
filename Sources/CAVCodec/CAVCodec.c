// Loads libavcodec on first use and forwards fieldcap's calls to it (see CAVCodec.h for why).
#include "CAVCodec.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CAVCODEC_STRING(x) #x
#define CAVCODEC_EXPAND_STRING(x) CAVCODEC_STRING(x)
// The soname of the libavcodec the headers describe: the structures fieldcap reads
// (AVCodecContext, AVFrame, AVPacket) have that major version's layout, so no other may be loaded.
#define CAVCODEC_LIBRARY "libavcodec.so." CAVCODEC_EXPAND_STRING(LIBAVCODEC_VERSION_MAJOR)

#define CAVCODEC_POINTER(type, name, parameters, arguments) type(*name) parameters;
#define CAVCODEC_POINTER_VOID(name, parameters, arguments) void(*name) parameters;
static struct {
    CAVCODEC_FUNCTIONS(CAVCODEC_POINTER, CAVCODEC_POINTER_VOID)
} functions;

static pthread_once_t loading = PTHREAD_ONCE_INIT;
static char failure[512];

static void load(void) {
    // RTLD_LOCAL: FFmpeg's symbols (and those of the libraries it needs) stay out of the global
    // scope, where they could shadow another library's. dlsym on the handle also searches the
    // libraries libavcodec needs, so libavutil's functions resolve through it.
    void *library = dlopen(CAVCODEC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "%s", dlerror());
        return;
    }
#define CAVCODEC_RESOLVE(name)                                                              \
    *(void **)&functions.name = dlsym(library, #name);                                      \
    if (functions.name == NULL) {                                                           \
        snprintf(failure, sizeof failure, "%s has no %s", CAVCODEC_LIBRARY, #name);         \
        return;                                                                             \
    }
#define CAVCODEC_RESOLVE_VALUE(type, name, parameters, arguments) CAVCODEC_RESOLVE(name)
#define CAVCODEC_RESOLVE_VOID(name, parameters, arguments) CAVCODEC_RESOLVE(name)
    CAVCODEC_FUNCTIONS(CAVCODEC_RESOLVE_VALUE, CAVCODEC_RESOLVE_VOID)
    // FFmpeg's own log lines would interleave with fieldcap's status line; its errors reach the
    // user through the return codes fieldcap reports.
    functions.av_log_set_level(AV_LOG_QUIET);
}

const char *CAVCodec_load(void) {
    pthread_once(&loading, load);
    return failure[0] ? failure : NULL;
}

const char *CAVCodec_library_name(void) { return CAVCODEC_LIBRARY; }

static void require_loaded(const char *name) {
    const char *problem = CAVCodec_load();
    if (problem == NULL) return;
    // A programming error: the Swift side loads the library (and reports a failure) before
    // its first call.
    fprintf(stderr, "fieldcap: %s called without libavcodec: %s\n", name, problem);
    abort();
}

#define CAVCODEC_FORWARD(type, name, parameters, arguments) \
    type CAVCodec_##name parameters {                       \
        require_loaded(#name);                              \
        return functions.name arguments;                    \
    }
#define CAVCODEC_FORWARD_VOID(name, parameters, arguments) \
    void CAVCodec_##name parameters {                      \
        require_loaded(#name);                             \
        functions.name arguments;                          \
    }
CAVCODEC_FUNCTIONS(CAVCODEC_FORWARD, CAVCODEC_FORWARD_VOID)
