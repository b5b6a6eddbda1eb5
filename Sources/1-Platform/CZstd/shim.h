// libzstd (Debian: libzstd-dev): MCAP chunks compressed with zstd.
#include <stddef.h>
#include <zstd.h>
