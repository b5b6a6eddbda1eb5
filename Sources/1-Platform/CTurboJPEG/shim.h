// libjpeg-turbo's TurboJPEG API (Debian: libturbojpeg0-dev), for the live preview's encoder.
#include <stddef.h>
#include <turbojpeg.h>
