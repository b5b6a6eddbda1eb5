// Loads libavformat on first use and forwards fieldcap's calls to it (see CFFmpeg.h for why).
#include "CFFmpeg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CFFMPEG_STRING(x) #x
#define CFFMPEG_EXPAND_STRING(x) CFFMPEG_STRING(x)
// The soname of the libavformat the headers describe: the structures fieldcap reads (AVStream,
// AVPacket, ...) have that major version's layout, so no other may be loaded.
#define CFFMPEG_LIBRARY "libavformat.so." CFFMPEG_EXPAND_STRING(LIBAVFORMAT_VERSION_MAJOR)

#define CFFMPEG_POINTER(type, name, parameters, arguments) type(*name) parameters;
#define CFFMPEG_POINTER_VOID(name, parameters, arguments) void(*name) parameters;
static struct {
    CFFMPEG_FUNCTIONS(CFFMPEG_POINTER, CFFMPEG_POINTER_VOID)
} functions;

static pthread_once_t loading = PTHREAD_ONCE_INIT;
static char failure[512];

static void load(void) {
    // RTLD_LOCAL: FFmpeg's symbols (and those of the ~140 libraries it needs) stay out of the
    // global scope, where they could shadow another library's.
    void *library = dlopen(CFFMPEG_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "%s", dlerror());
        return;
    }
#define CFFMPEG_RESOLVE(name)                                                                  \
    *(void **)&functions.name = dlsym(library, #name);                                         \
    if (functions.name == NULL) {                                                              \
        snprintf(failure, sizeof failure, "%s has no %s", CFFMPEG_LIBRARY, #name);            \
        return;                                                                                \
    }
#define CFFMPEG_RESOLVE_VALUE(type, name, parameters, arguments) CFFMPEG_RESOLVE(name)
#define CFFMPEG_RESOLVE_VOID(name, parameters, arguments) CFFMPEG_RESOLVE(name)
    CFFMPEG_FUNCTIONS(CFFMPEG_RESOLVE_VALUE, CFFMPEG_RESOLVE_VOID)
}

const char *CFFmpeg_load(void) {
    pthread_once(&loading, load);
    return failure[0] ? failure : NULL;
}

const char *CFFmpeg_library_name(void) { return CFFMPEG_LIBRARY; }

static void require_loaded(const char *name) {
    const char *problem = CFFmpeg_load();
    if (problem == NULL) return;
    // A programming error: the Swift side loads the library (and reports a failure) before
    // its first call.
    fprintf(stderr, "fieldcap: %s called without FFmpeg: %s\n", name, problem);
    abort();
}

#define CFFMPEG_FORWARD(type, name, parameters, arguments) \
    type CFFmpeg_##name parameters {                       \
        require_loaded(#name);                             \
        return functions.name arguments;                   \
    }
#define CFFMPEG_FORWARD_VOID(name, parameters, arguments) \
    void CFFmpeg_##name parameters {                      \
        require_loaded(#name);                            \
        functions.name arguments;                         \
    }
CFFMPEG_FUNCTIONS(CFFMPEG_FORWARD, CFFMPEG_FORWARD_VOID)
