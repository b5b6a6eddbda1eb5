// libiio 0.24 (Debian: libiio-dev) for fieldcap's IIO IMUs. Its API is plain C functions, so the
// shim only names the header; libiio 1.0 changed that API and is not what this targets.
#ifndef CIIO_SHIM_H
#define CIIO_SHIM_H

#include <iio.h>

#endif
