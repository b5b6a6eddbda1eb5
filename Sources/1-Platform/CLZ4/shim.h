// liblz4 (Debian: liblz4-dev): MCAP chunks compressed with LZ4 (its frame format, as MCAP specifies).
#include <stddef.h>
#include <lz4frame.h>
