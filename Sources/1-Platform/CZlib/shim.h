// zlib (Debian: zlib1g-dev): the CRC-32 MCAP's records carry.
#include <stddef.h>
#include <zlib.h>
